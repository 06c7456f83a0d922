"""The REPL driven for real: prompt-toolkit pipe input in process, and a pty for Ctrl-C."""

from __future__ import annotations

import csv
import io
import os
import select
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from sqlkv.dbapi.schema import SchemaReader
from sqlkv.cli.main import open_session
from sqlkv.cli.repl import Repl, SqlCompleter, statement_complete

from tests.interfaces.conftest import REPO

EOF_KEY = "\x04"
CTRL_C = "\x03"


def drive(keys: str, session=None) -> tuple[str, str]:
    """Type ``keys`` into a REPL (Enter is \\r); return what it printed to stdout and stderr."""
    session = session if session is not None else open_session(":memory:")
    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        repl = Repl(session, input=pipe, output=DummyOutput(), out=out, err=err, history=InMemoryHistory())
        assert repl.run() == 0
    return out.getvalue(), err.getvalue()


def lines(*statements: str) -> str:
    return "".join(s + "\r" for s in statements)


def test_multi_line_statement_and_aligned_output() -> None:
    out, err = drive(lines(
        "CREATE TABLE t (k INT PRIMARY KEY, v TEXT);",
        "INSERT INTO t VALUES (1, 'first'),",
        "  (2, 'second');",
        "SELECT v",
        "  FROM t",
        "  WHERE k = 2;",
    ) + EOF_KEY)
    assert err == ""
    assert "in-memory" in out.splitlines()[0]
    assert "INSERT 2" in out
    assert "| second |" in out and "first" not in out.split("INSERT 2")[1]
    assert "(1 row)" in out


def test_semicolon_inside_quotes_does_not_end_the_statement() -> None:
    out, _ = drive(lines("SELECT 'a;", "b' AS s;") + EOF_KEY)
    assert "a;\\nb" in out  # the newline inside the string is shown escaped in table mode


def test_ctrl_c_at_the_prompt_drops_the_input() -> None:
    out, _ = drive("SELECT 'dropped'" + CTRL_C + lines("SELECT 'kept' AS x;") + EOF_KEY)
    assert "kept" in out and "dropped" not in out


def test_errors_keep_the_session_and_its_transaction() -> None:
    session = open_session(":memory:")
    out, err = drive(lines(
        "CREATE TABLE t (k INT PRIMARY KEY);",
        "BEGIN;",
        "INSERT INTO t VALUES (1);",
        "INSERT INTO t VALUES (1);",
        "SELEC oops;",
        "INSERT INTO t VALUES (2);",
        "COMMIT;",
        ".mode csv",
        "SELECT k FROM t ORDER BY k;",
    ) + EOF_KEY, session)
    assert err.count("Error: ") == 2
    assert out.strip().endswith("k\n1\n2")


def test_quit_stops_reading() -> None:
    out, _ = drive(lines(".quit", "SELECT 'never' AS x;"))
    assert "never" not in out


@pytest.mark.parametrize("word", ["quit", "exit", "\\q", "QUIT;", "  exit  "])
def test_quit_words_of_litecli_and_psql_exit_at_the_prompt(word: str) -> None:
    out, err = drive(lines("SELECT 'before' AS x;", word, "SELECT 'never' AS x;"))
    assert "before" in out and "never" not in out and err == ""


def test_quit_words_inside_a_statement_are_sql() -> None:
    """Only alone on the prompt: as the second line of a statement, ``exit`` is SQL text."""
    out, err = drive(lines("SELECT 1 AS", "exit;", "SELECT 'after' AS x;") + EOF_KEY)
    assert "| exit |" in out and "after" in out and err == ""


def test_help_alone_at_the_prompt_lists_the_dot_commands() -> None:
    out, err = drive(lines("help", "\\?") + EOF_KEY)
    assert out.count(".tables [PATTERN]") == 2 and err == ""


def test_mode_headers_timer_and_unknown_commands() -> None:
    out, err = drive(lines(
        ".mode json", "SELECT 1 AS a, 'x' AS b;",
        ".mode csv", ".headers off", "SELECT 2 AS a;",
        ".timer on", "SELECT 3 AS a;", ".timer off",
        ".mode yaml", ".frobnicate", ".help",
    ) + EOF_KEY)
    assert '{"a": 1, "b": "x"}' in out
    assert "\n2\n" in out
    assert "Run Time: " in out
    assert "usage: .mode" in err and 'unknown command ".frobnicate"' in err
    assert ".schema [PATTERN]" in out


SCHEMA = [
    "CREATE TABLE accounts (id INT PRIMARY KEY, email VARCHAR(64) NOT NULL, balance DECIMAL(12,2) DEFAULT 0,"
    " active BOOL NOT NULL DEFAULT TRUE, CONSTRAINT positive CHECK (balance >= 0))",
    "CREATE UNIQUE INDEX accounts_email ON accounts (email)",
    "CREATE TABLE events (account_id INT, at TIMESTAMP, kind TEXT, payload BYTES,"
    " PRIMARY KEY (account_id, at DESC))",
    "CREATE INDEX events_kind ON events (kind) STORING (payload)",
]


def _shape(session) -> list[tuple]:
    """Schema facts independent of ids: names, types, nullability, defaults, keys, checks."""
    shape = []
    for table in SchemaReader(session).tables():
        cols = [(c.name, c.type, c.nullable, c.default_sql) for c in table.columns if not c.hidden]
        idx = [(i.name, [table.column_by_id(c).name for c in i.column_ids], i.descending, i.unique,
                [table.column_by_id(c).name for c in i.storing]) for i in table.all_indexes()]
        shape.append((table.name, cols, idx, [(c.name, c.expr_sql) for c in table.checks]))
    return shape


def test_schema_output_recreates_the_schema() -> None:
    first = open_session(":memory:")
    for sql in SCHEMA:
        first.execute(sql)
    out, err = drive(lines(".schema") + EOF_KEY, first)
    assert err == ""
    ddl = out.split("\n", 2)[2]  # after the banner
    second = open_session(":memory:")
    for _ in second.execute_script(ddl):
        pass
    assert _shape(second) == _shape(first)
    out, _ = drive(lines(".schema events", ".tables", ".indexes accounts", ".schema nope") + EOF_KEY, first)
    assert "CREATE INDEX events_kind" in out and "CREATE TABLE accounts" not in out
    assert "accounts\nevents\n" in out
    assert "accounts_email" in out


def test_dump_reloads_to_the_same_data() -> None:
    first = open_session(":memory:")
    for sql in SCHEMA:
        first.execute(sql)
    first.executemany("INSERT INTO accounts VALUES (?, ?, ?, ?)", [
        (1, "o'hara@example.com", Decimal("10.50"), True),
        (2, 'quote"d@example.com', None, False),
    ])
    first.execute(
        "INSERT INTO events VALUES (1, '2024-01-02 03:04:05.000006', 'login', ?), (2, '2024-01-02', NULL, NULL)",
        (b"\x01'x\xc3\xa9",),  # UTF-8 bytes: see sql_literal for arbitrary bytes
    )
    out, err = drive(lines(".dump") + EOF_KEY, first)
    assert err == ""
    script = out.split("\n", 2)[2]
    second = open_session(":memory:")
    for _ in second.execute_script(script):
        pass
    for table in ("accounts", "events"):
        query = f"SELECT * FROM {table} ORDER BY 1, 2"
        assert second.execute(query).fetchall() == first.execute(query).fetchall()
    assert _shape(second) == _shape(first)


def test_import_csv_into_new_and_typed_tables(tmp_path: Path) -> None:
    data = [["name", "city"], ["Ada", "London"], ["Grace, Admiral", "New York"], ['Alan "AMT"', ""]]
    path = tmp_path / "people.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(data)
    session = open_session(":memory:")
    out, err = drive(lines(f".import {path} people") + EOF_KEY, session)
    assert err == "" and "imported 3 rows into people" in out
    imported = session.execute("SELECT name, city FROM people").fetchall()
    assert sorted(imported) == sorted(tuple(r) for r in data[1:])

    typed = tmp_path / "stock.csv"
    typed.write_text("sku,qty,price,since\nA-1,3,1.50,2024-01-31\nB-2,,2,2023-12-01\n")
    session.execute("CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INT, price DECIMAL(6,2), since DATE)")
    out, err = drive(lines(f".import {typed} stock") + EOF_KEY, session)
    assert err == ""
    rows = session.execute("SELECT sku, qty, price, CAST(since AS TEXT) FROM stock ORDER BY sku").fetchall()
    assert rows == [("A-1", 3, Decimal("1.50"), "2024-01-31"), ("B-2", None, Decimal("2.00"), "2023-12-01")]

    bad = tmp_path / "bad.csv"
    bad.write_text("sku,qty,price,since\nC-3,three,1,2024-01-01\n")
    _, err = drive(lines(f".import {bad} stock") + EOF_KEY, session)
    assert 'value "three" is not valid for column "qty"' in err


def test_read_runs_a_file(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text("CREATE TABLE t (k INT PRIMARY KEY);\nINSERT INTO t VALUES (5);\n")
    out, err = drive(lines(f".read {script}", ".mode csv", "SELECT k FROM t;", ".read /nonexistent.sql") + EOF_KEY)
    assert out.rstrip().endswith("k\n5")
    assert "nonexistent.sql" in err


def test_kv_shows_keys_and_decoded_values() -> None:
    session = open_session(":memory:")
    session.execute("CREATE TABLE users (id INT PRIMARY KEY, name TEXT)")
    session.execute("CREATE INDEX users_name ON users (name)")
    session.execute("INSERT INTO users VALUES (1, 'ada'), (2, 'alan')")
    out, err = drive(lines(".mode csv", ".kv users", ".kv users 1", ".kv nope") + EOF_KEY, session)
    rows = list(csv.reader(io.StringIO(out.split("\n", 2)[2])))
    primary = SchemaReader(session).find_table("users").primary_index.name
    keys = [r[0] for r in rows if r and r[0].startswith("/users/")]
    assert any(k.startswith(f"/users/{primary}/1/") for k in keys)
    assert any(k.startswith('/users/users_name/"alan"/2') for k in keys)
    assert any("ada" in r[1] for r in rows if r and r[0].startswith(f"/users/{primary}/1/"))
    assert len([r for r in rows[rows.index(["key", "value"], 1):] if r and r[0].startswith("/users/")]) == 1
    assert 'relation "nope" does not exist' in err


def test_stats_and_explain() -> None:
    session = open_session(":memory:")
    session.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    out, err = drive(lines(".stats", ".explain on", "SELECT k FROM t WHERE k = 1;", ".explain off") + EOF_KEY, session)
    assert err == ""
    stats = session.db.engine.stats()
    assert all(str(key) in out for key in stats if not isinstance(stats[key], dict))
    plan = session.execute("EXPLAIN SELECT k FROM t WHERE k = 1").fetchall()
    assert all(str(row[0]).strip() in out for row in plan)


def test_completion_candidates_come_from_the_catalog() -> None:
    session = open_session(":memory:")
    session.execute("CREATE TABLE customers (id INT PRIMARY KEY, email TEXT, city TEXT)")
    session.execute("CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT)")
    with create_pipe_input() as pipe:
        repl = Repl(session, input=pipe, output=DummyOutput(), out=io.StringIO(), history=InMemoryHistory())
        completer = repl.prompt.completer
        assert isinstance(completer, SqlCompleter)

        def candidates(text: str) -> list[str]:
            return [c.text for c in completer.get_completions(Document(text), None)]

        assert candidates("SEL") == ["SELECT"]
        assert candidates("sel") == ["select"]
        assert "customers" in candidates("SELECT * FROM cu")
        assert candidates("SELECT * FROM customers c WHERE c.ci") == ["city"]
        assert "customer_id" in candidates("SELECT cust")
        assert candidates(".ind") == [".indexes", ".indices"]
        assert candidates(".indices cu") == ["customers"]  # the alias completes tables too
        # New tables show up after DDL run through the shell.
        repl.execute("CREATE TABLE invoices (id INT PRIMARY KEY);")
        assert "invoices" in candidates("SELECT * FROM inv")


@pytest.mark.parametrize("text, complete", [
    ("", True),
    (".tables", True),
    ("SELECT 1", False),
    ("SELECT 1;", True),
    ("SELECT 1;  -- done", True),
    ("SELECT ';'", False),
    ("SELECT 'it''s;'", False),
    ("SELECT 'it''s';", True),
    ("SELECT 1 /* ; */", False),
    ("SELECT 1 /* unterminated ;", False),
    ('SELECT ";" FROM t;', True),
])
def test_statement_complete(text: str, complete: bool) -> None:
    assert statement_complete(text) is complete


# -- Ctrl-C while a statement runs, through a real terminal ---------------------------------


def _read_until(fd: int, needle: str, timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"did not see {needle!r}; got {seen[-2000:]!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk.decode("utf-8", "replace")
    if needle not in seen:
        raise AssertionError(f"did not see {needle!r}; got {seen[-2000:]!r}")
    return seen


def _controlling_tty() -> None:
    """In the child: a new session whose controlling terminal is the pty, so ^C sends SIGINT."""
    import fcntl
    import termios

    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_ctrl_c_cancels_a_running_statement_and_keeps_the_session(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    setup = "CREATE TABLE n (i INT PRIMARY KEY); INSERT INTO n SELECT * FROM (VALUES " + ", ".join(
        f"({i})" for i in range(300)) + ") AS v(i)"
    prepared = subprocess.run([sys.executable, "-m", "sqlkv.cli", db, "-c", setup],
                              capture_output=True, text=True, cwd=REPO, timeout=60)
    assert prepared.returncode == 0, prepared.stderr
    master, slave = os.openpty()
    env = dict(os.environ, TERM="xterm", HOME=str(tmp_path), PROMPT_TOOLKIT_NO_CPR="1")
    proc = subprocess.Popen([sys.executable, "-m", "sqlkv.cli", db], stdin=slave, stdout=slave,
                            stderr=slave, cwd=REPO, env=env, preexec_fn=_controlling_tty)
    os.close(slave)
    try:
        _read_until(master, "sqlkv>", 90)  # a cold start under heavy load can take long
        # 27 million joined rows: minutes of work unless the cancel stops it.
        os.write(master, b"SELECT count(*) FROM n a, n b, n c;\r")
        # On a loaded machine the statement may not have started within a second, and a
        # Ctrl-C that lands before it does is not a cancel: repeat it until one is.
        for attempt in range(8):
            time.sleep(1.0)
            os.write(master, CTRL_C.encode())
            try:
                _read_until(master, "cancelled", 5)
                break
            except AssertionError:
                if attempt == 7:
                    raise
        os.write(master, b"SELECT 4000 + 242 AS answer;\r")
        answer = _read_until(master, "(1 row)", 30)
        assert "4242" in answer
        if "sqlkv>" not in answer.split("(1 row)", 1)[1]:  # the prompt may come in the same read
            _read_until(master, "sqlkv>", 30)  # back at the prompt (raw mode) before Ctrl-D
        os.write(master, EOF_KEY.encode())
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_read_of_a_directory_or_binary_file_is_a_clear_error(tmp_path: Path) -> None:
    binary = tmp_path / "b.sql"
    binary.write_bytes(b"SELECT 1;\0")
    _, err = drive(lines(f".read {tmp_path}", f".read {binary}", ".read /dev/zero") + EOF_KEY)
    assert "internal error" not in err
    assert f"cannot read {tmp_path}: Is a directory" in err
    assert f"{binary}: not a text file (NUL byte at offset 9)" in err
    assert "/dev/zero: not a text file (NUL byte at offset 0)" in err


def test_scripts_that_read_each_other_stop_at_a_nesting_limit(tmp_path: Path) -> None:
    """It was "internal error (RecursionError ...)"."""
    (tmp_path / "a.sql").write_text(f".read {tmp_path / 'b.sql'}\n")
    (tmp_path / "b.sql").write_text(f"SELECT 42;\n.read {tmp_path / 'a.sql'}\n")
    out, err = drive(lines(f".read {tmp_path / 'a.sql'}", "SELECT 7;") + EOF_KEY)
    assert "internal error" not in err and "RecursionError" not in err
    assert "nested more than 25 deep" in err
    assert "| 7 |" in out  # the shell carries on


def test_import_is_atomic_and_bad_files_are_clear_errors(tmp_path: Path) -> None:
    """A refused record undoes the whole import, including the table it created (issue 10)."""
    session = open_session(":memory:")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n" + "x,y\n" * 3000 + "only-one\n")  # the bad record comes after full batches
    not_utf8 = tmp_path / "latin1.csv"
    not_utf8.write_bytes(b"a,b\ncaf\xe9,1\n")
    _, err = drive(lines(f".import {ragged} fresh", f".import {not_utf8} other", f".import {tmp_path} d")
                   + EOF_KEY, session)
    assert "record 3001 has 1 fields, expected 2" in err
    assert "not UTF-8 text" in err
    assert f"cannot read {tmp_path}: Is a directory" in err
    assert "internal error" not in err
    assert session.execute("SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                           "('fresh', 'other', 'd')").fetchall() == [(0,)]

    # inside an open transaction only the import is undone, the user's work stays
    session.execute("CREATE TABLE fresh (a TEXT, b TEXT)")
    session.execute("BEGIN")
    session.execute("INSERT INTO fresh VALUES ('mine', 'too')")
    _, err = drive(lines(f".import {ragged} fresh") + EOF_KEY, session)
    assert "record 3001" in err
    session.execute("COMMIT")
    assert session.execute("SELECT a, b FROM fresh").fetchall() == [("mine", "too")]


def test_import_refuses_unterminated_quotes_devices_and_empty_files(tmp_path: Path) -> None:
    """An unterminated quote was read as a field running to the end of the file, /dev/zero was
    read forever, an empty file did nothing without a word; a bad byte is named at its offset
    in the file, not in the chunk being decoded."""
    session = open_session(":memory:")
    unterminated = tmp_path / "quote.csv"
    unterminated.write_text('a,b\n1,2\n3,"4\n')
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    late = tmp_path / "late.csv"
    late.write_bytes(b"a,b\n" + b"1,xxxxxxxxxxxxxxxxxxxx\n" * 20000 + b"2,\xc3\n")
    _, err = drive(lines(f".import {unterminated} q", ".import /dev/zero z", f".import {empty} e",
                         f".import {late} l") + EOF_KEY, session)
    assert f"{unterminated}: malformed CSV" in err
    assert "/dev/zero: not a text file (NUL byte at offset 0)" in err
    assert f"{empty}: empty file" in err
    assert f"{late}: not UTF-8 text (invalid byte at offset {4 + 23 * 20000 + 2})" in err
    assert session.execute("SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                           "('q', 'z', 'e', 'l')").fetchall() == [(0,)]


def test_tables_pattern_is_a_like_pattern() -> None:
    session = open_session(":memory:")
    for name in ("customers", "cust_notes", "orders", "custard"):
        session.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY)")
    session.execute("CREATE VIEW customer_view AS SELECT k FROM customers")
    out, err = drive(lines(".tables cust%", ".tables CUST_%", ".tables %ers", ".tables cust") + EOF_KEY, session)
    assert err == ""
    assert out.split("\n")[2:] == [  # after the two banner lines
        "cust_notes", "custard", "customer_view", "customers",   # cust%
        "cust_notes", "custard", "customer_view", "customers",   # CUST_% (_ is any one character)
        "customers", "orders",                                   # %ers
        "",                                                      # cust: no table has exactly that name
    ]


def test_read_errors_carry_file_line_col(tmp_path: Path) -> None:
    script = tmp_path / "s.sql"
    script.write_text("CREATE TABLE t (k INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\n  INSERT INTO t VALUES (1);\n")
    session = open_session(":memory:")
    _, err = drive(lines(f".read {script}") + EOF_KEY, session)
    assert err.startswith(f"Error: {script}:3:3: "), err
    assert "duplicate" in err
    assert session.execute("SELECT k FROM t").fetchall() == [(1,)]


def test_completion_knows_the_clause_it_is_in(tmp_path: Path) -> None:
    session = open_session(":memory:")
    session.execute("CREATE TABLE customers (id INT PRIMARY KEY, email TEXT, city TEXT)")
    session.execute("CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, total INT)")
    (tmp_path / "script_one.sql").write_text("")
    with create_pipe_input() as pipe:
        repl = Repl(session, input=pipe, output=DummyOutput(), out=io.StringIO(), history=InMemoryHistory())
        completer = repl.prompt.completer

        def candidates(text: str) -> list[tuple[str, str]]:
            """Names first, keywords after them; the keywords are left out here. ``^`` marks
            the cursor (default: the end)."""
            cursor = text.index("^") if "^" in text else len(text)
            document = Document(text.replace("^", ""), cursor)
            found = [(c.text, c.display_meta_text) for c in completer.get_completions(document, None)]
            kinds = [meta for _, meta in found]
            assert kinds == sorted(kinds, key=lambda k: k == "keyword")  # names before keywords
            return [item for item in found if item[1] != "keyword"]

        # after FROM / JOIN / INTO / UPDATE: tables, never columns
        assert candidates("SELECT * FROM c") == [("customers", "table")]
        assert candidates("SELECT * FROM orders o JOIN c") == [("customers", "table")]
        assert candidates("INSERT INTO o")[0] == ("orders", "table")
        assert candidates("UPDATE orders SET t") == [("total", "column")]
        # after SELECT / WHERE / ON: the columns of the tables in scope, not of the others
        assert candidates("SELECT  FROM orders WHERE c") == [("customer_id", "column")]
        assert ("city", "column") not in candidates("SELECT * FROM orders WHERE c")
        assert candidates("SELECT e^ FROM customers, orders") == [("email", "column")]
        assert candidates("SELECT * FROM customers, o") == [("orders", "table")]
        assert candidates("SELECT * FROM orders o JOIN customers c ON o.customer_id = c.i") == [("id", "column")]
        # after a name: keywords (FROM, WHERE...), not names
        assert candidates("SELECT email FR") == []
        assert [c.text for c in completer.get_completions(Document("SELECT email FR"), None)] == ["FROM"]
        # dot command arguments
        assert candidates(".mode ma") == [("markdown", "")]
        assert candidates(".headers o") == [("on", ""), ("off", "")]
        assert candidates(".schema or") == [("orders", "table")]
        assert [c for c, _ in candidates(f".read {tmp_path}/script_o")] == ["ne.sql"]


def test_a_backslash_g_ends_a_statement_with_vertical_output() -> None:
    out, err = drive(lines("SELECT 1 AS a,", "  'x' AS bee\\G", "SELECT 2 AS c;") + EOF_KEY)
    assert err == ""
    assert "*************************** 1. row ***************************\n  a: 1\nbee: x\n" in out
    assert "| c |" in out  # the next statement is back to table mode
