"""sqlkv through its PEP 249 driver: connect, create, load, query, transactions, errors.

Run it:  python examples/driver_demo.py [DIRECTORY]
(without DIRECTORY it uses a fresh temporary directory and removes it afterwards)
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
import tempfile
from decimal import Decimal

import sqlkv


def build(path: str) -> None:
    # autocommit=False (the default): statements run in a transaction until commit().
    conn = sqlkv.connect(path)
    cur = conn.cursor()
    cur.execute(
        "CREATE TABLE readings ("
        " sensor TEXT NOT NULL, taken_at TIMESTAMP NOT NULL, celsius DECIMAL(5,2),"
        " PRIMARY KEY (sensor, taken_at))"
    )
    start = datetime.datetime(2024, 1, 1, 12, 0)
    rows = [
        (sensor, start + datetime.timedelta(minutes=10 * i), Decimal(18 + (i * 7 + n) % 9) / 2)
        for n, sensor in enumerate(["attic", "cellar", "kitchen"])
        for i in range(6)
    ]
    # One parse, one plan, one batch for all the rows.
    cur.executemany("INSERT INTO readings VALUES (?, ?, ?)", rows)
    print(f"inserted {cur.rowcount} readings; in a transaction: {conn.in_transaction}")
    conn.commit()

    # `with conn:` commits on success and rolls back on an exception (like sqlite3).
    try:
        with conn:
            conn.execute("INSERT INTO readings VALUES ('attic', ?, 30)", (start,))
    except sqlkv.IntegrityError as exc:
        print(f"duplicate key refused: {exc}")
    conn.close()


def report(path: str) -> None:
    # A new connection on the same directory sees what was committed.
    with_autocommit = sqlkv.connect(path, autocommit=True)
    cur = with_autocommit.cursor()
    cur.execute(
        "SELECT sensor, COUNT(*) AS n, MIN(celsius) AS low, MAX(celsius) AS high"
        " FROM readings GROUP BY sensor ORDER BY sensor"
    )
    print(" | ".join(col[0] for col in cur.description))
    for sensor, n, low, high in cur:
        print(f"{sensor} | {n} | {low} | {high}")

    # Named parameters work too; fetchmany() pulls rows lazily, arraysize at a time.
    cur.arraysize = 2
    cur.execute(
        "SELECT taken_at, celsius FROM readings WHERE sensor = :s ORDER BY taken_at DESC",
        {"s": "kitchen"},
    )
    latest = cur.fetchmany()
    print("latest kitchen readings:", ", ".join(f"{t:%H:%M}={c}" for t, c in latest))
    print("type of celsius is NUMBER:", cur.description[1][1] == sqlkv.NUMBER)
    with_autocommit.close()


def main() -> int:
    if len(sys.argv) > 1:
        build(sys.argv[1])
        report(sys.argv[1])
        return 0
    scratch = tempfile.mkdtemp(prefix="sqlkv-demo-")
    try:
        build(os.path.join(scratch, "db"))
        report(os.path.join(scratch, "db"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
