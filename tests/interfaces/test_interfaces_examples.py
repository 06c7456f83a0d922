"""Every example runs; shop.sql gives sqlite3's answers; migration.sql fails CI on a violation."""

from __future__ import annotations

import csv
import io
import sqlite3
import subprocess
import sys
from pathlib import Path

from sqlkv.sql.parse import split_statements

from tests.interfaces.conftest import EXAMPLES, REPO, run_sqlkv


def _sqlite_csv(script: str) -> str:
    """The csv-mode output sqlkv should print for ``script``, computed by sqlite3."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for stmt in split_statements(script):
        cur = conn.execute(stmt.sql)
        if cur.description is not None:
            writer.writerow([d[0] for d in cur.description])
            writer.writerows(["" if v is None else v for v in row] for row in cur)
    conn.close()
    return out.getvalue()


def test_shop_matches_sqlite3() -> None:
    script = (EXAMPLES / "shop.sql").read_text()
    result = run_sqlkv("-f", str(EXAMPLES / "shop.sql"), "--mode", "csv")
    assert result.status == 0, result.err
    assert result.out == _sqlite_csv(script)


def test_migration_passes_then_fails_on_a_violation(tmp_path: Path) -> None:
    result = run_sqlkv(str(tmp_path / "ok"), "-f", str(EXAMPLES / "migration.sql"), "--mode", "csv")
    assert result.status == 0, result.err
    rows = list(csv.reader(io.StringIO(result.out)))
    assert rows[0] == ["name", "ok"] and len(rows) == 4
    assert {r[1] for r in rows[1:]} == {"true"}

    # The application changed a balance behind the migration's back: the first assertion fails.
    text = (EXAMPLES / "migration.sql").read_text()
    marker = "-- Assertions."
    broken = text.replace(marker, "UPDATE accounts SET balance_cents = balance_cents + 1 WHERE id = 2;\n" + marker)
    script = tmp_path / "migration.sql"
    script.write_text(broken)
    result = run_sqlkv(str(tmp_path / "bad"), "-f", str(script))
    assert result.status == 1
    failing = next(s for s in split_statements(broken) if "ledger total equals balances" in s.sql)
    assert result.err.startswith(f"{script}:{failing.line}:{failing.col}: "), result.err
    assert "ok" in result.err or "migration_checks" in result.err
    # The migration itself was committed before the assertion failed.
    after = run_sqlkv(str(tmp_path / "bad"), "-c", "SELECT count(*) FROM ledger", "--mode", "csv", "--no-headers")
    assert after.out.strip() == "4"


def test_driver_demo_runs() -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "driver_demo.py")], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "inserted 18 readings; in a transaction: True" in out
    assert "duplicate key refused" in out
    assert "type of celsius is NUMBER: True" in out
    sensors = [line.split(" | ") for line in out.splitlines() if line.count(" | ") == 3]
    assert [s[0] for s in sensors[1:]] == ["attic", "cellar", "kitchen"]
    assert all(s[1] == "6" for s in sensors[1:])


def _csv_sections(text: str, headers: set[str]) -> list[list[list[str]]]:
    """Split csv-mode output into one list of rows per result (each starts with its header)."""
    sections: list[list[list[str]]] = []
    for row in csv.reader(io.StringIO(text)):
        if ",".join(row) in headers:
            sections.append([])
        else:
            sections[-1].append(row)
    return sections


def test_key_tour_shows_the_keys_statements_write() -> None:
    result = run_sqlkv("-f", str(EXAMPLES / "key_tour.sql"), "--mode", "csv")
    assert result.status == 0, result.err
    after_insert, after_update, after_delete, plan_get, plan_scan = _csv_sections(
        result.out, {"index_name,key,value", "key,value", "index_name,keys", "info"})
    # Two rows, three indexes: six keys, each shown under its table and index name.
    assert len(after_insert) == 6
    assert all(key.startswith(f"/users/{index}/") or key == f"/users/{index}" or
               key.startswith(f"/users/{index}/") for index, key, _ in after_insert)
    assert {index for index, _, _ in after_insert} == {"users_email_key", "users_name_desc",
                                                       after_insert[0][0]}
    # Integer keys sort numerically: id 2 before id 10 in the primary index.
    primary = [key for index, key, _ in after_insert if index == after_insert[0][0]]
    assert primary[0].split("/")[3] == "2" and primary[1].split("/")[3] == "10"
    # The UPDATE moved the email entry; the DELETE left one key per index.
    assert any("ada@lovelace.org" in key for key, _ in after_update)
    assert not any("ada@example.com" in key for key, _ in after_update)
    assert [int(n) for _, n in after_delete] == [1, 1, 1]
    assert any("get" in line[0] or "lookup" in line[0] for line in plan_get)
    assert any("scan" in line[0] for line in plan_scan)


def test_orm_pandas_example_runs(tmp_path: Path) -> None:
    """examples/orm_pandas.py: ORM models, a relationship, an upsert, pandas read_sql/to_sql."""
    import pytest

    pytest.importorskip("pandas")
    pytest.importorskip("sqlalchemy")
    proc = subprocess.run([sys.executable, str(EXAMPLES / "orm_pandas.py"), str(tmp_path / "library")],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Ursula K. Le Guin: A Wizard of Earthsea, The Dispossessed"
    assert lines[1] == "under 9: ['A Wizard of Earthsea (Ursula K. Le Guin)', 'Solaris (Stanislaw Lem)']"
    # the upsert changed Solaris' price and added The Cyberiad
    table = [line.split() for line in lines[2:7]]
    assert table[0] == ["author", "title", "price"]
    assert any(row[-2:] == ["Solaris", "6.00"] for row in table) and any("Cyberiad" in row for row in table)
    assert lines[7] == "summary: [('Stanislaw Lem', 2, 17.0), ('Ursula K. Le Guin', 2, 17.49)]"
    assert lines[8] == "books per author: [('Stanislaw Lem', 2), ('Ursula K. Le Guin', 2)]"
    assert (tmp_path / "library").is_dir()  # a directory URL, not a memory database
