"""The ``sqlkv`` program through subprocesses: -c, -f, stdin, modes, exit codes, error locations."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.interfaces.conftest import run_sqlkv, sqlite_rows

SETUP = [
    "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER)",
    "INSERT INTO items VALUES (1, 'bolt', 10), (2, 'nut, hex', NULL), (3, 'washer \"M6\"', 7)",
]
QUERY = "SELECT id, name, qty FROM items ORDER BY id"


def _csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _as_text(rows: list[tuple]) -> list[list[str]]:
    return [["" if v is None else str(v) for v in row] for row in rows]


def test_command_in_csv_mode_matches_sqlite3() -> None:
    result = run_sqlkv("-c", "; ".join(SETUP + [QUERY]), "--mode", "csv")
    assert result.status == 0, result.err
    rows = _csv_rows(result.out)
    assert rows[0] == ["id", "name", "qty"]
    assert rows[1:] == _as_text(sqlite_rows(SETUP + [QUERY])[0])


def test_json_mode_matches_sqlite3() -> None:
    result = run_sqlkv("-c", "; ".join(SETUP + [QUERY]), "--mode", "json")
    assert result.status == 0, result.err
    expected = [dict(zip(["id", "name", "qty"], row)) for row in sqlite_rows(SETUP + [QUERY])[0]]
    assert json.loads(result.out) == expected


@pytest.mark.parametrize("mode", ["table", "box", "markdown"])
def test_aligned_modes_line_up(mode: str) -> None:
    result = run_sqlkv("-c", "; ".join(SETUP + [QUERY]), "--mode", mode)
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    assert len({len(line) for line in lines}) == 1, result.out  # every line the same width
    for row in sqlite_rows(SETUP + [QUERY])[0]:
        assert any(all(str(v) in line for v in row if v is not None) for line in lines)
    assert sum("NULL" in line for line in lines) == 1


def test_line_mode_and_headers_off() -> None:
    result = run_sqlkv("-c", "; ".join(SETUP + [QUERY + " LIMIT 1"]), "--mode", "line")
    assert result.out.split("\n")[:3] == ["  id = 1", "name = bolt", " qty = 10"]
    result = run_sqlkv("-c", "; ".join(SETUP + [QUERY]), "--mode", "csv", "--no-headers")
    assert _csv_rows(result.out)[0] == ["1", "bolt", "10"]


def test_file_error_reports_file_line_col_and_stops(tmp_path: Path) -> None:
    db = tmp_path / "db"
    script = tmp_path / "load.sql"
    text = (
        "CREATE TABLE t (k INT PRIMARY KEY);\n"
        "INSERT INTO t VALUES (1);\n"
        "-- the next statement breaks the primary key\n"
        "INSERT INTO t VALUES (2);  INSERT INTO t\n"
        "  VALUES (1);\n"
        "INSERT INTO t VALUES (3);\n"
    )
    script.write_text(text)
    result = run_sqlkv(str(db), "-f", str(script))
    assert result.status == 1
    failing_line = 4
    failing_col = text.splitlines()[3].index("INSERT", 1) + 1  # the second INSERT on line 4
    assert result.err.startswith(f"{script}:{failing_line}:{failing_col}: "), result.err
    assert "t" in result.err
    # Statements before the error were committed; the one after never ran.
    after = run_sqlkv(str(db), "-c", "SELECT k FROM t ORDER BY k", "--mode", "csv", "--no-headers")
    assert _csv_rows(after.out) == [["1"], ["2"]]


def test_stdin_script_errors_name_stdin(tmp_path: Path) -> None:
    text = "SELECT 1;\n\n  SELEC 2;\n"
    result = run_sqlkv(str(tmp_path / "db"), "--mode", "csv", stdin=text)
    assert result.status == 1
    # The location is the offending word: SELEC (the bug pointed past it).
    column = text.splitlines()[2].index("SELEC") + 1
    assert result.err.startswith(f"<stdin>:3:{column}: "), result.err
    assert "syntax error" in result.err and "at line" not in result.err
    assert result.err.splitlines()[1:] == ["  SELEC 2", "  ^"]  # the statement, a caret under SELEC


def test_keep_going_runs_the_rest(tmp_path: Path) -> None:
    text = "CREATE TABLE t (k INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\nSELECT count(*) FROM t;\n"
    result = run_sqlkv(str(tmp_path / "db"), "--keep-going", "--mode", "csv", "--no-headers", stdin=text)
    assert result.status == 1
    assert result.err.startswith("<stdin>:3:1: ")
    assert result.out.strip() == "2"


def test_failed_script_transaction_is_rolled_back(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    text = (
        "CREATE TABLE t (k INT PRIMARY KEY);\n"
        "BEGIN;\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (1);\nCOMMIT;\n"
    )
    result = run_sqlkv(db, stdin=text)
    assert result.status == 1 and result.err.startswith("<stdin>:4:1: ")
    after = run_sqlkv(db, "-c", "SELECT count(*) FROM t", "--mode", "csv", "--no-headers")
    assert after.out.strip() == "0"


def test_ok_script_exits_zero_and_persists(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run_sqlkv(db, "-c", "; ".join(SETUP)).status == 0
    result = run_sqlkv(db, "-c", QUERY, "--mode", "csv")
    assert result.status == 0
    assert _csv_rows(result.out)[1:] == _as_text(sqlite_rows(SETUP + [QUERY])[0])


def test_missing_file_and_bad_options() -> None:
    result = run_sqlkv("-f", "/nonexistent/script.sql")
    assert result.status == 1 and "/nonexistent/script.sql" in result.err
    result = run_sqlkv("--mode", "yaml", "-c", "SELECT 1")
    assert result.status == 2 and "invalid choice" in result.err


def test_database_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("not a database")
    result = run_sqlkv(str(blocker), "-c", "SELECT 1")
    assert result.status == 1
    assert "plain.txt" in result.err and "Traceback" not in result.err


def test_subcommand_test_runs_sqllogictest(tmp_path: Path) -> None:
    slt = tmp_path / "basic.test"
    slt.write_text(
        "statement ok\nCREATE TABLE t (a INT PRIMARY KEY)\n\n"
        "statement ok\nINSERT INTO t VALUES (1), (2)\n\n"
        "query I\nSELECT a FROM t ORDER BY a\n----\n1\n2\n"
    )
    result = run_sqlkv("test", str(slt))
    assert result.status == 0, result.out + result.err
    slt.write_text("query I\nSELECT 1\n----\n2\n")
    assert run_sqlkv("test", str(slt)).status != 0


def test_subcommand_check(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run_sqlkv(db, "-c", "; ".join(SETUP) + "; CREATE INDEX items_name ON items (name)").status == 0
    result = run_sqlkv("check", db)
    assert result.status == 0, result.out + result.err


def test_bench_needs_a_suite() -> None:
    result = run_sqlkv("bench", "tpc")
    assert result.status == 2 and "invalid choice" in result.err


@pytest.mark.parametrize("suite", ["kv", "sql"])
def test_bench_delegates_to_the_benchmark(suite: str) -> None:
    result = run_sqlkv("bench", suite, "--help")
    assert result.status == 0, result.err
    assert f"sqlkv bench {suite}" in result.out


def test_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    """`sqlkv db -c ... | head -1`: no 'internal error', no traceback, the status of SIGPIPE."""
    import subprocess
    import sys

    sql = "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 200000) SELECT x FROM s"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqlkv.cli", "-c", sql, "--mode", "csv"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `head` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_commands_and_files_run_in_command_line_order(tmp_path: Path) -> None:
    script = tmp_path / "f.sql"
    script.write_text("SELECT 'f' AS x;\n")
    result = run_sqlkv("-c", "SELECT 'c1' AS x", "-f", str(script), "-c", "SELECT 'c2' AS x",
                       "--mode", "csv", "--no-headers")
    assert result.status == 0, result.err
    assert result.out.split() == ["c1", "f", "c2"]


@pytest.mark.parametrize("content, expected", [
    (b"SELECT 1;\n\xff\xfe;\n", "not UTF-8 text (invalid byte at offset 10)"),
    (b"SELECT 1;\0", "not a text file (NUL byte at offset 9)"),
])
def test_script_that_is_not_text_is_a_clear_error(tmp_path: Path, content: bytes, expected: str) -> None:
    script = tmp_path / "s.sql"
    script.write_bytes(content)
    result = run_sqlkv("-f", str(script))
    assert result.status == 1
    assert result.err == f"sqlkv: {script}: {expected}\n"
    assert result.out == ""  # nothing ran: the file is refused before any statement


def test_script_from_dev_zero_and_directory_are_clear_errors(tmp_path: Path) -> None:
    result = run_sqlkv("-f", "/dev/zero")
    assert (result.status, result.err) == (1, "sqlkv: /dev/zero: not a text file (NUL byte at offset 0)\n")
    result = run_sqlkv("-f", str(tmp_path))
    assert (result.status, result.err) == (1, f"sqlkv: cannot read {tmp_path}: Is a directory\n")


def test_locked_database_error_names_the_path_once(tmp_path: Path) -> None:
    import sqlkv

    path = str(tmp_path / "db")
    conn = sqlkv.connect(path)
    try:
        result = run_sqlkv(path, "-c", "SELECT 1")
    finally:
        conn.close()
    assert result.status == 1
    assert result.err.count(path) == 1, result.err
    assert "locked" in result.err
    assert "--read-only opens it beside the writer" in result.err  # what to do instead


def test_options_may_follow_the_database_and_command_words(tmp_path: Path) -> None:
    """As in the sqlite3 shell: ``sqlkv db --mode csv "SELECT ..."`` (argparse used to refuse it)."""
    script = tmp_path / "x.sql"
    script.write_text("SELECT 'file' AS f;\n")
    result = run_sqlkv(":memory:", "--mode", "csv", "SELECT 1 AS a", "-f", str(script), "--no-headers",
                       "SELECT 2 AS b")
    assert (result.status, result.err) == (0, "")
    assert result.out == "file\n1\n2\n"  # -f before the command words; options apply to all


def test_a_read_only_shell_runs_beside_a_writer(tmp_path: Path) -> None:
    import sqlkv

    path = str(tmp_path / "db")
    conn = sqlkv.connect(path)
    try:
        conn.execute("CREATE TABLE t (a INT PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES (7)")
        conn.commit()
        result = run_sqlkv(path, "--read-only", "--mode", "list", "SELECT a FROM t")
    finally:
        conn.close()
    assert (result.status, result.out, result.err) == (0, "a\n7\n", "")


def test_syntax_errors_speak_sql_not_sqlglot() -> None:
    result = run_sqlkv("-c", "CREATE TABLE t (id INT PRIMARY KEY); SELECT * FROM t WHERE id = = 3")
    assert result.status == 1
    assert "expected an expression after =" in result.err
    assert "sqlglot" not in result.err and "<class" not in result.err
    result = run_sqlkv("-c", "CALL refresh_all()")  # sqlglot falls back to a bare Command (and warns)
    assert result.status == 1
    assert "Falling back" not in result.err and result.err.count("\n") == 1, result.err
    result = run_sqlkv("-c", "CREATE TABLE t (id INT PRIMARY KEY); SHOW TABLES")  # the report's example
    assert (result.status, result.err) == (0, ""), result.err
    assert "| t          | BASE TABLE |" in result.out


def test_a_double_quoted_string_gets_a_hint_for_sqlite3_habits() -> None:
    result = run_sqlkv("-c", "CREATE TABLE c (name TEXT); SELECT * FROM c WHERE name = \"Ann\"")
    assert result.status == 1
    assert result.err == ('<command>:1:29: column "Ann" does not exist (SQLSTATE 42703)\n'
                          "  hint: double quotes name a column; write the string as 'Ann'\n")
    result = run_sqlkv("-c", "CREATE TABLE c (name TEXT); SELECT nope FROM c")
    assert "hint" not in result.err  # an unquoted name is just missing
