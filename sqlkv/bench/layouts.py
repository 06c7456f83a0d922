"""The two layouts of an ARRAY column side by side: ``sqlkv bench layouts [--clock cpu]``.

Two tables hold the same rows, ``(id INT PRIMARY KEY, tags INT[])``: ``packed`` keeps each array
inside its row's value (the default), ``exploded`` stores it as a header plus one KV pair per
element (``FAMILY f (tags) WITH (layout = exploded)``, grammar-notes/keys.md). For arrays of
5 and of 1,000 elements it times, per statement, each by primary key in its own transaction:

- whole read       ``SELECT tags FROM t WHERE id = ?``
- one-element read ``SELECT tags[3] FROM t WHERE id = ?``
- one-element update ``UPDATE t SET tags[3] = ? WHERE id = ?``
- append           ``UPDATE t SET tags = array_append(tags, ?) WHERE id = ?``

and prints microseconds per statement and exploded/packed. ``--clock cpu`` (this process's CPU
time) is steadier on a shared machine; ``--path DIR`` uses an on-disk database there instead of
the memory engine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time

import sqlkv
from sqlkv.bench.sql_timing import CLOCKS

LAYOUTS = {
    "packed": "CREATE TABLE {t} (id INT PRIMARY KEY, tags INT[])",
    "exploded": "CREATE TABLE {t} (id INT PRIMARY KEY, tags INT[], FAMILY f (tags) WITH (layout = exploded))",
}
WORKLOADS = [
    ("whole read", "SELECT tags FROM {t} WHERE id = ?", False),
    ("one-element read", "SELECT tags[3] FROM {t} WHERE id = ?", False),
    ("one-element update", "UPDATE {t} SET tags[3] = ? WHERE id = ?", True),
    ("append", "UPDATE {t} SET tags = array_append(tags, ?) WHERE id = ?", True),
]


def _fill(conn, table: str, rows: int, size: int) -> None:
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO {table} VALUES (?, ?)", [(i, list(range(i, i + size))) for i in range(rows)])
    conn.execute("COMMIT")


def _time(conn, sql: str, writes: bool, rows: int, ops: int, clock: str) -> float:
    """Microseconds per statement, over ``ops`` statements on random rows."""
    rng = random.Random(11)
    now = time.process_time if clock == "cpu" else time.perf_counter
    params = [((rng.randrange(1000), rng.randrange(rows)) if writes else (rng.randrange(rows),)) for _ in range(ops)]
    cur = conn.cursor()
    start = now()
    for p in params:
        cur.execute(sql, p)
        if not writes:
            cur.fetchall()
    return (now() - start) / ops * 1e6


def run_layouts(path: str, sizes: list[int], rows: int, ops: int, clock: str) -> list[tuple[int, str, float, float]]:
    """(size, workload, packed us, exploded us) for each size and workload."""
    conn = sqlkv.connect(path, autocommit=True)
    out = []
    try:
        for size in sizes:
            n = max(1, rows // max(1, size // 50))  # fewer rows of the large arrays
            for layout, ddl in LAYOUTS.items():
                conn.execute(ddl.format(t=f"{layout}_{size}"))
                _fill(conn, f"{layout}_{size}", n, size)
            for name, sql, writes in WORKLOADS:
                packed = _time(conn, sql.format(t=f"packed_{size}"), writes, n, ops, clock)
                exploded = _time(conn, sql.format(t=f"exploded_{size}"), writes, n, ops, clock)
                out.append((size, name, packed, exploded))
    finally:
        conn.close()
    return out


def report(results: list[tuple[int, str, float, float]], clock: str) -> str:
    lines = [f"{'elements':>8}  {'workload':<20} {'packed':>12} {'exploded':>12}  exploded/packed   ({clock} us/stmt)"]
    for size, name, packed, exploded in results:
        lines.append(f"{size:>8}  {name:<20} {packed:>12.1f} {exploded:>12.1f}  {exploded / packed:>6.2f}")
    return "\n".join(lines)


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sqlkv bench layouts",
                                     description="packed vs exploded ARRAY columns: reads, element updates, appends")
    parser.add_argument("--sizes", default="5,1000", help="array lengths, comma-separated (default 5,1000)")
    parser.add_argument("--rows", type=int, default=200, help="rows of 5-element arrays (fewer of larger ones)")
    parser.add_argument("--ops", type=int, default=300, help="statements timed per workload (default 300)")
    parser.add_argument("--clock", choices=CLOCKS, default="wall", help="wall (default) or cpu (this process)")
    parser.add_argument("--path", help="an on-disk database directory to create (default: the memory engine)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    tmp = None
    path = ":memory:"
    if args.path:
        tmp = tempfile.mkdtemp(dir=args.path)
        path = tmp + "/db"
    try:
        print(report(run_layouts(path, sizes, args.rows, args.ops, args.clock), args.clock))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(run())
