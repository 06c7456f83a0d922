"""Dot commands outside the REPL: in -f files, piped input and command-line words, as the
sqlite3 shell allows -- and every dot command run from a script."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sqlkv.cli.dot import COMMANDS
from tests.interfaces.conftest import run_sqlkv

SETUP = """CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER);
INSERT INTO items VALUES (1, 'bolt', 10), (2, 'nut, <hex>', NULL), (3, 'it''s', 7);
"""
QUERY = "SELECT * FROM items ORDER BY id;\n"


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")
def test_modes_and_settings_print_what_the_sqlite3_shell_prints() -> None:
    script = SETUP + "".join([
        ".headers on\n.nullvalue -\n.mode list\n", QUERY,
        ".separator ;\n", QUERY,
        ".mode tabs\n", QUERY,
        ".mode quote\n", QUERY,
        ".mode insert items2\n", QUERY,
        ".mode html\n", QUERY,
        ".headers off\n.mode insert\n", QUERY,
        ".mode list\n.print hello   world\n.echo on\nSELECT 1;\n.echo off\n",
        ".changes on\nUPDATE items SET qty = 1;\nDELETE FROM items WHERE id = 3;\n",
    ])
    oracle = subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True, text=True, timeout=60)
    ours = run_sqlkv(stdin=script)
    assert ours.status == 0, ours.err
    assert ours.out == oracle.stdout
    assert ours.err == oracle.stderr == ""


def test_command_line_words_run_dot_commands_and_sql_in_order(tmp_path: Path) -> None:
    data = tmp_path / "x.csv"
    data.write_text("id,price,name\n1,2.5,bolt\n2,,nut\n3,10,\n")
    db = str(tmp_path / "db")
    result = run_sqlkv(db, f".import {data} t", ".schema t", ".mode csv",
                       "SELECT id, price, name, price * 2 FROM t ORDER BY id")
    assert result.status == 0, result.err
    assert "id INT,\n  price FLOAT,\n  name TEXT\n" in result.out  # types inferred from the data
    assert result.out.split(");\n")[1].splitlines() == [
        "id,price,name,price * 2", "1,2.5,bolt,5.0", "2,,nut,", "3,10.0,,20.0"]
    dump = run_sqlkv(db, ".dump")
    assert dump.status == 0 and dump.out.startswith("BEGIN;\nCREATE TABLE t"), dump.err
    copy = run_sqlkv(str(tmp_path / "copy"), stdin=dump.out)
    assert copy.status == 0, copy.err
    same = "SELECT * FROM t ORDER BY id"
    assert run_sqlkv(str(tmp_path / "copy"), "-c", same).out == run_sqlkv(db, "-c", same).out


def test_dot_lines_in_files_stop_at_errors_unless_bail_is_off(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text(SETUP + ".mode csv\n.headers off\nSELECT count(*) FROM items;\n"
                      "  .nosuch thing\nSELECT 'after';\n")
    result = run_sqlkv("-f", str(script))
    assert (result.status, result.out) == (1, "3\n")
    assert result.err == f'{script}:6:1: unknown command ".nosuch"; try .help\n'
    kept = run_sqlkv("-f", str(script), "--keep-going")
    assert (kept.status, kept.out) == (1, "3\nafter\n")
    script.write_text(".bail off\n.mode csv\nSELEC 1;\nSELECT 'after';\n")
    assert run_sqlkv("-f", str(script)).out == "'after'\nafter\n"  # header, row


def test_a_dot_at_the_start_of_a_statement_line_is_sql_inside_a_statement(tmp_path: Path) -> None:
    text = "SELECT 'a\n.mode csv\nb' AS x\n;\n.mode csv\nSELECT /* .x\n.y */ 2 AS y;\n"
    result = run_sqlkv(stdin=text)
    assert result.status == 0, result.err
    assert "a\\n.mode csv\\nb" in result.out  # inside a string: not a command (table mode)
    assert result.out.endswith("y\n2\n")


def _every_command_script(tmp_path: Path) -> tuple[str, dict[str, Path]]:
    files = {name: tmp_path / name for name in ("x.csv", "read.sql", "out.txt", "once.txt", "dump.sql")}
    files["x.csv"].write_text("a,b\n1,x\n2,y\n")
    files["read.sql"].write_text(".mode csv\nSELECT 'from read' AS r;\n")
    lines = f"""
.help
.import {files['x.csv']} t
.tables
.schema t
.indexes t
.indices t
.databases
.kv t 1
.stats
.headers on
.mode list
.nullvalue (null)
.separator ,
SELECT a, NULL AS n FROM t ORDER BY a;
.width 6 -4
.mode column
SELECT a, b FROM t ORDER BY a;
.mode list
.separator |
.expand on
SELECT a, b FROM t WHERE a = 1;
.expand off
.pager off
.echo on
SELECT 'echoed' AS e;
.echo off
.bail off
.changes on
UPDATE t SET b = 'z' WHERE a = 2;
.changes off
.timer on
SELECT 1 AS timed;
.timer off
.explain on
SELECT b FROM t WHERE a = 1;
.explain off
.print printed text
.show
.output {files['out.txt']}
SELECT 'to file' AS f;
.output
.once {files['once.txt']}
SELECT 'once' AS o;
SELECT 'back' AS k;
.read {files['read.sql']}
.mode list
.dump {files['dump.sql']}
.backup {tmp_path / 'bk'}
.save {tmp_path / 'sv'}
.shell echo from-shell
.system echo from-system
.open {tmp_path / 'bk'}
SELECT count(*) AS copied FROM t;
.exit
SELECT 'never';
.quit
"""
    return lines, files


def test_every_dot_command_runs_from_a_script(tmp_path: Path) -> None:
    script, files = _every_command_script(tmp_path)
    used = set(re.findall(r"^\.(\w+)", script, re.MULTILINE))
    assert used == set(COMMANDS), set(COMMANDS) ^ used  # a new command needs a line here
    result = run_sqlkv(str(tmp_path / "db"), stdin=script)
    assert (result.status, result.err) == (0, "")
    out = result.out
    assert ".import FILE.csv TABLE" in out  # .help
    assert "\nt\n" in out and "CREATE TABLE t (" in out and "a INT" in out  # .tables .schema
    assert out.count("| t     | t_pkey |") == 2 and "/t/t_pkey/1/0" in out  # .indexes, .indices, .kv
    assert f"main: {tmp_path / 'db'} r/w\n" in out  # .databases
    assert "a|n\n1,(null)\n" not in out and "a,n\n1,(null)\n2,(null)\n" in out  # separator, nullvalue
    assert "a          b\n------  ----\n     1     x\n     2     y\n" in out  # .width 6 -4, column mode
    assert "a: 1\nb: x\n" in out  # .expand
    assert "SELECT 'echoed' AS e;\ne\nechoed\n" in out  # .echo
    assert "changes: 1   total_changes: 1\n" in out
    assert re.search(r"timed\n1\nRun Time: \d+\.\d{3}s\n", out)
    assert "printed text\n" in out and "nullvalue: \"(null)\"" in out  # .print .show
    assert files["out.txt"].read_text() == "f\nto file\n" and "to file" not in out
    assert files["once.txt"].read_text() == "o\nonce\n" and "k\nback\n" in out
    assert "r\nfrom read\n" in out
    assert files["dump.sql"].read_text().startswith("BEGIN;\nCREATE TABLE t")
    assert "from-shell\n" in out and "from-system\n" in out
    assert out.endswith("copied\n2\n") and "never" not in out  # .open the backup, .exit
    for copy in ("bk", "sv"):
        again = run_sqlkv(str(tmp_path / copy), "--mode", "csv", "-c", "SELECT a, b FROM t ORDER BY a")
        assert again.out == "a,b\n1,x\n2,z\n", again.err


@pytest.mark.parametrize("line, message", [
    (".mode nosuch", "usage: .mode"),
    (".headers maybe", "usage: .headers on|off"),
    (".width x", "usage: .width"),
    (".once", "usage: .once FILE"),
    (".output /nonexistent/dir/f", "cannot write /nonexistent/dir/f"),
    (".open", "usage: .open"),
    (".backup", "usage: .backup"),
    (".shell exit 3", "command exited with status 3"),
    (".import /nonexistent.csv t", "cannot read /nonexistent.csv"),
    (".kv", "usage: .kv"),
    (".read /nonexistent.sql", "cannot read /nonexistent.sql"),
    (".schema nosuch", 'relation "nosuch" does not exist'),
    (".tables 'unterminated", "cannot parse command"),
])
def test_dot_command_errors_name_the_script_line(line: str, message: str) -> None:
    result = run_sqlkv(stdin=f"SELECT 1 AS one;\n{line}\n")
    assert result.status == 1
    assert result.err.startswith("<stdin>:2:1: ") and message in result.err, result.err


def test_backup_refuses_a_target_that_holds_files(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    result = run_sqlkv(stdin=f".backup {tmp_path / 'full'}\n")
    assert result.status == 1 and "exists and is not empty" in result.err
    assert (tmp_path / "full" / "f").read_text() == "x"


def test_backslash_g_ends_a_statement_with_vertical_output_in_scripts_too() -> None:
    script = SETUP + ("SELECT id, name FROM items WHERE id = 1; SELECT id FROM items WHERE id = 3\\G\n"
                      "SELECT 'a\\G' AS s\\G\n"  # a \G inside a string is text
                      "SELECT 'back to' AS t;\n")
    result = run_sqlkv(stdin=script)
    assert result.status == 0, result.err
    assert result.out == (
        "+----+------+\n| id | name |\n+----+------+\n|  1 | bolt |\n+----+------+\n"  # only the last is vertical
        "*************************** 1. row ***************************\nid: 3\n"
        "*************************** 1. row ***************************\ns: a\\G\n"
        "+---------+\n| t       |\n+---------+\n| back to |\n+---------+\n")
    failed = run_sqlkv(stdin="SELECT 1;\nSELECT nope\\G\n")
    assert failed.status == 1 and failed.err.startswith("<stdin>:2:1: column \"nope\" does not exist"), failed.err


def test_schema_takes_a_name_or_a_like_pattern_and_listings_refuse_extra_words(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    made = run_sqlkv(db, "-c", "CREATE TABLE customers (a INT); CREATE TABLE custard (b INT); "
                     "CREATE TABLE other (c INT); CREATE VIEW cust_v AS SELECT a FROM customers")
    assert made.status == 0, made.err
    result = run_sqlkv(db, ".schema cust%")
    assert result.status == 0, result.err
    assert re.findall(r"CREATE (?:TABLE|VIEW) (\w+)", result.out) == ["custard", "customers", "cust_v"]
    result = run_sqlkv(db, ".schema OTHER")  # a name: case-insensitive, as SQL names are
    assert re.findall(r"CREATE (?:TABLE|VIEW) (\w+)", result.out) == ["other"]
    result = run_sqlkv(db, ".schema zz%")
    assert (result.status, result.err) == (1, '<command>:1:1: relation "zz%" does not exist\n')
    for line, usage in ((".tables a b", ".tables [PATTERN]"), (".schema a b", ".schema [PATTERN]")):
        result = run_sqlkv(db, line)
        assert (result.status, result.err) == (1, f"<command>:1:1: usage: {usage}\n")


def test_import_infers_dates_and_timestamps_and_widens_mixed_columns(tmp_path: Path) -> None:
    data = tmp_path / "y.csv"
    data.write_text("qty,price,day,at,mixed,bad,both\n"
                    "3,1.5,2024-01-02,2024-01-02 10:30,2024-01-02,2024-02-30,2024-01-02\n"
                    ",2,2024-02-03,2024-02-03T11:00:00.5,7,2024-01-01,2024-01-02 08:00\n")
    result = run_sqlkv(":memory:", f".import {data} t", ".schema t", ".mode list",
                       "SELECT qty, price, day + 1, at, mixed, bad, both FROM t ORDER BY price")
    assert result.status == 0, result.err
    assert ("qty INT,\n  price FLOAT,\n  day DATE,\n  at TIMESTAMP,\n  mixed TEXT,\n  bad TEXT,\n"
            "  both TIMESTAMP\n") in result.out  # 2024-02-30 is no date; a number among dates is text
    assert result.out.split(");\n")[1].splitlines()[1:] == [
        "3|1.5|2024-01-03|2024-01-02 10:30:00|2024-01-02|2024-02-30|2024-01-02 00:00:00",
        "NULL|2.0|2024-02-04|2024-02-03 11:00:00.500000|7|2024-01-01|2024-01-02 08:00:00"]


def test_exit_code_and_help_for_one_command_as_in_sqlite3() -> None:
    result = run_sqlkv(stdin="SELECT 1 AS one;\n.exit 3\nSELECT 'never';\n")
    assert (result.status, result.err) == (3, "") and "never" not in result.out
    result = run_sqlkv(":memory:", ".help mode")
    assert result.out.startswith(".mode MODE [TABLE]") and result.out.count("\n") == 1
    result = run_sqlkv(":memory:", ".exit soon")
    assert (result.status, result.err) == (1, "<command>:1:1: usage: .exit [CODE]\n")
