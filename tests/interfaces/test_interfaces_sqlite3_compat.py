"""sqlite3-module habits on the sqlkv driver, compared with sqlite3 itself where it has them."""

from __future__ import annotations

import sqlite3

import pytest

import sqlkv

SCRIPT = """
CREATE TABLE t (id INT PRIMARY KEY, name TEXT, score INT);
INSERT INTO t VALUES (1, 'ann', 10), (2, 'bob', NULL), (3, 'cy', 30);
UPDATE t SET score = 20 WHERE id = 2;
DELETE FROM t WHERE id = 3;
"""


def both() -> tuple[sqlkv.Connection, sqlite3.Connection]:
    return sqlkv.connect(), sqlite3.connect(":memory:")


def test_row_factory_row_by_index_and_name_like_sqlite3() -> None:
    ours, theirs = both()
    ours.row_factory, theirs.row_factory = sqlkv.Row, sqlite3.Row
    for conn in (ours, theirs):
        conn.executescript(SCRIPT)
    query = "SELECT id, name AS Who, score FROM t ORDER BY id"
    mine, oracle = ours.execute(query).fetchall(), theirs.execute(query).fetchall()
    assert [tuple(r) for r in mine] == [tuple(r) for r in oracle]
    assert [r.keys() for r in mine] == [r.keys() for r in oracle]
    for a, b in zip(mine, oracle):
        assert (a["who"], a["WHO"], a[0], a[-1], len(a)) == (b["who"], b["WHO"], b[0], b[-1], len(b))
    with pytest.raises(IndexError):
        mine[0]["nope"]
    assert ours.execute(query).fetchone() == mine[0]
    assert next(iter(ours.execute(query))) == mine[0]
    cur = ours.cursor()
    cur.row_factory = None  # a cursor's own factory wins, as in sqlite3
    assert cur.execute(query).fetchmany(1) == [(1, "ann", 10)]


def test_a_custom_row_factory_is_called_with_cursor_and_tuple() -> None:
    conn = sqlkv.connect()
    conn.row_factory = lambda cursor, row: {d[0]: v for d, v in zip(cursor.description, row)}
    assert conn.execute("SELECT 1 AS a, 'x' AS b").fetchall() == [{"a": 1, "b": "x"}]


def test_total_changes_and_executescript_cursor_like_sqlite3() -> None:
    ours, theirs = both()
    for conn in (ours, theirs):
        cur = conn.executescript(SCRIPT)
        assert cur.__class__.__name__ == "Cursor"
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(7, "g", 1), (8, "h", 2)])
        conn.execute("UPDATE t SET score = score + 1")
    assert ours.total_changes == theirs.total_changes


def test_create_function_matches_sqlite3() -> None:
    ours, theirs = both()
    for conn in (ours, theirs):
        conn.executescript(SCRIPT)
        conn.create_function("shout", 1, lambda v: None if v is None else str(v).upper() + "!")
        conn.create_function("nargs", -1, lambda *a: len(a), deterministic=True)
    query = "SELECT shout(name), nargs(), nargs(id, name, NULL), shout(NULL) FROM t ORDER BY id"
    assert ours.execute(query).fetchall() == theirs.execute(query).fetchall()
    ours.create_function("shout", 1, None)  # removed again
    with pytest.raises(sqlkv.ProgrammingError, match="shout"):
        ours.execute("SELECT shout('a')")


def test_create_function_replaces_a_cached_plan_and_errors_are_clear() -> None:
    conn = sqlkv.connect()
    conn.create_function("f", 1, lambda v: v + 1)
    assert conn.execute("SELECT f(1)").fetchone() == (2,)
    conn.create_function("f", 1, lambda v: v * 10)
    assert conn.execute("SELECT f(1)").fetchone() == (10,)
    with pytest.raises(sqlkv.ProgrammingError, match="wrong number of arguments"):
        conn.execute("SELECT f(1, 2)")
    conn.create_function("boom", 0, lambda: 1 / 0)
    with pytest.raises(sqlkv.OperationalError, match="boom.*ZeroDivisionError"):
        conn.execute("SELECT boom()").fetchall()
    conn.create_function("weird", 0, lambda: object())
    with pytest.raises(sqlkv.DataError, match="weird"):
        conn.execute("SELECT weird()").fetchall()
    with pytest.raises(sqlkv.ProgrammingError):
        conn.create_function("not a name", 1, len)
    other = sqlkv.connect()  # functions belong to their connection
    with pytest.raises(sqlkv.ProgrammingError, match="unknown function"):
        other.execute("SELECT f(1)")


def test_trace_callback_sees_each_statement() -> None:
    ours, theirs = both()
    seen: dict[str, list[str]] = {"ours": [], "theirs": []}
    ours.set_trace_callback(seen["ours"].append)
    theirs.set_trace_callback(seen["theirs"].append)
    for conn in (ours, theirs):
        conn.execute("CREATE TABLE t (id INT PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES (1)")
    assert [s for s in seen["ours"]] == ["CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)"]
    assert all(s in seen["theirs"] for s in seen["ours"])
    ours.set_trace_callback(None)
    ours.execute("SELECT 1")
    assert len(seen["ours"]) == 2


def test_iterdump_reloads_into_sqlite3_and_sqlkv() -> None:
    ours, theirs = both()
    for conn in (ours, theirs):
        conn.executescript(SCRIPT)
    ours.commit()
    dump = list(ours.iterdump())
    assert dump[0] == "BEGIN;" and dump[-1] == "COMMIT;"
    copy = sqlkv.connect()
    copy.executescript("\n".join(dump))
    query = "SELECT * FROM t ORDER BY id"
    assert copy.execute(query).fetchall() == theirs.execute(query).fetchall()


def test_backup_copies_one_snapshot_into_an_empty_database(tmp_path) -> None:
    source = sqlkv.connect(str(tmp_path / "src"))
    source.executescript(SCRIPT)
    source.execute("CREATE INDEX t_name ON t (name)")
    source.commit()
    target = sqlkv.connect(str(tmp_path / "dst"))
    calls: list[tuple] = []
    source.backup(target, progress=lambda *a: calls.append(a))
    assert calls == [(0, 0, 1)]
    query = "SELECT * FROM t ORDER BY id"
    assert target.execute(query).fetchall() == source.execute(query).fetchall()
    assert "INDEX t_name" in "\n".join(target.iterdump())
    with pytest.raises(sqlkv.OperationalError, match="in a transaction"):
        source.backup(target)  # the SELECT above opened one (autocommit is off)
    target.commit()
    with pytest.raises(sqlkv.OperationalError, match="empty"):
        source.backup(target)
    with pytest.raises(sqlkv.NotSupportedError):
        source.backup(sqlkv.connect(), name="temp")


def test_isolation_level_maps_to_autocommit() -> None:
    conn = sqlkv.connect(isolation_level=None)
    assert conn.autocommit and conn.isolation_level is None
    conn.isolation_level = "DEFERRED"
    assert conn.autocommit is False and conn.isolation_level == ""
    assert sqlkv.connect().isolation_level == sqlite3.connect(":memory:").isolation_level == ""
    for level in ("IMMEDIATE", "EXCLUSIVE", "bogus"):
        with pytest.raises(sqlkv.NotSupportedError, match="isolation_level"):
            conn.isolation_level = level
        with pytest.raises(sqlkv.NotSupportedError):
            sqlkv.connect(isolation_level=level)
    assert conn.isolation_level == ""  # a refused level changed nothing


@pytest.mark.parametrize("call", [
    lambda: sqlkv.connect(detect_types=sqlkv.PARSE_DECLTYPES),
    lambda: sqlkv.connect(detect_types=sqlkv.PARSE_COLNAMES),
    lambda: sqlkv.register_converter("point", bytes),
    lambda: sqlkv.register_adapter(complex, str),
    lambda: sqlkv.connect().create_aggregate("mysum", 1, object),
    lambda: sqlkv.connect().create_collation("nocase2", lambda a, b: 0),
    lambda: setattr(sqlkv.connect(), "text_factory", bytes),
])
def test_what_sqlkv_cannot_honour_is_refused_not_ignored(call) -> None:
    with pytest.raises(sqlkv.NotSupportedError):
        call()


def test_text_factory_str_is_what_sqlkv_does() -> None:
    conn = sqlkv.connect()
    conn.text_factory = str  # common in ported code: accepted, it is the behaviour
    assert conn.text_factory is str
    assert conn.execute("SELECT 'x'").fetchone() == ("x",)
