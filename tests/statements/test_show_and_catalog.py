"""SHOW TABLES / COLUMNS / INDEXES / CREATE TABLE, DESCRIBE, and the catalog's system tables as
read-only SQL tables (sqlkv_internal.namespace / descriptors / create_statements)."""

from __future__ import annotations

import json

import pytest

from sqlkv.errors import NotSupportedError, ProgrammingError
from tests.statements.support import rows, s  # noqa: F401

DDL = ('CREATE TABLE "Q" (k INT PRIMARY KEY, v INT2 NOT NULL DEFAULT 3, w TEXT CHECK (length(w) > 1), '
       "INDEX (v) STORING (w), UNIQUE INDEX uw (w DESC) WHERE w > 'a')")


@pytest.fixture
def db(s):
    s.execute(DDL)
    s.execute("CREATE TABLE users (id INT PRIMARY KEY, name TEXT)")
    s.execute('CREATE VIEW vq AS SELECT k FROM "Q"')
    return s


def test_show_tables_columns_indexes(db):
    assert rows(db, "SHOW TABLES") == [("Q", "BASE TABLE"), ("users", "BASE TABLE"), ("vq", "VIEW")]
    want = [("k", "INT", "NO", None), ("v", "INT2", "NO", "3"), ("w", "TEXT", "YES", None)]
    assert rows(db, 'SHOW COLUMNS FROM "Q"') == want
    assert rows(db, "SHOW COLUMNS FROM q") == want  # names are case-insensitive unless quoted apart
    assert rows(db, 'DESCRIBE "Q"') == want
    assert rows(db, "DESC users") == [("id", "INT", "NO", None), ("name", "TEXT", "YES", None)]
    assert rows(db, 'SHOW INDEXES FROM "Q"') == [
        ("Q_pkey", True, True, "k", "", None, "btree"), ("Q_v_idx", False, False, "v", "w", None, "btree"),
        ("uw", True, False, "w DESC", "", "w > 'a'", "btree")]
    assert rows(db, "SHOW INDEX FROM users") == [("users_pkey", True, True, "id", "", None, "btree")]


def test_show_create_table_recreates_the_table(db):
    ((name, text),) = rows(db, 'SHOW CREATE TABLE "Q"')
    assert name == "Q" and text.startswith('CREATE TABLE "Q" (')
    assert "v INT2 NOT NULL DEFAULT 3" in text and "CHECK (LENGTH(w) > 1)" in text
    db.execute("DROP VIEW vq")
    db.execute('DROP TABLE "Q"')
    db.execute(text)  # the printed statement creates the same table again
    assert rows(db, 'SHOW CREATE TABLE "Q"') == [("Q", text)]
    assert rows(db, "SHOW CREATE users") == [
        ("users", "CREATE TABLE users (\n  id INT,\n  name TEXT,\n  CONSTRAINT users_pkey PRIMARY KEY (id)\n)")]


def test_show_create_view(db):
    assert rows(db, "SHOW CREATE VIEW vq") == [("vq", 'CREATE VIEW vq AS SELECT k FROM "Q"')]


@pytest.mark.parametrize("sql, error, text", [
    ("SHOW COLUMNS FROM nope", ProgrammingError, 'relation "nope" does not exist'),
    ("SHOW INDEXES FROM nope", ProgrammingError, 'relation "nope" does not exist'),
    ("SHOW CREATE TABLE nope", ProgrammingError, 'relation "nope" does not exist'),
    ("DESCRIBE vq", ProgrammingError, "is a view"),
    ("SHOW COLUMNS FROM", ProgrammingError, "needs one table name"),
    ("SHOW GRANTS", NotSupportedError, "SHOW TABLES"),
])
def test_show_errors(db, sql, error, text):
    with pytest.raises(error, match=text):
        rows(db, sql)


def test_namespace_and_descriptors_read_the_system_tables(db):
    ns = rows(db, "SELECT name, id, key FROM sqlkv_internal.namespace ORDER BY id")
    assert [(n, k) for n, _, k in ns] == [("q", '/Table/1/1/"q"'), ("users", '/Table/1/1/"users"'),
                                          ("vq", '/Table/1/1/"vq"')]
    ids = {n: i for n, i, _ in ns}
    descs = rows(db, "SELECT id, name, kind, descriptor, key FROM sqlkv_internal.descriptors ORDER BY id")
    assert [(i, n, k, key) for i, n, k, _, key in descs] == [
        (ids["q"], "Q", "table", f"/Table/2/1/{ids['q']}"), (ids["users"], "users", "table", f"/Table/2/1/{ids['users']}"),
        (ids["vq"], "vq", "view", f"/Table/2/1/{ids['vq']}")]
    q = json.loads(descs[0][3])
    assert q["name"] == "Q" and [c["name"] for c in q["columns"]] == ["k", "v", "w"]
    # joins with the KV listing like any table
    assert rows(db, "SELECT d.name FROM sqlkv_internal.namespace n JOIN sqlkv_internal.descriptors d "
                    "ON d.id = n.id WHERE n.name = 'users'") == [("users",)]


def test_sequences_table_shows_the_id_allocator(db):
    ((name, value, key),) = rows(db, "SELECT name, value, key FROM sqlkv_internal.sequences")
    top = max(i for _, i, _ in rows(db, "SELECT * FROM sqlkv_internal.namespace"))
    assert (name, int(value), key) == ("descriptor_id", top + 1, '/Table/3/1/"descriptor_id"')


def test_catalog_tables_are_read_only_and_transactional(db):
    with pytest.raises(ProgrammingError, match="cannot modify virtual table"):
        db.execute("INSERT INTO sqlkv_internal.namespace VALUES ('x', 1, 'y')")
    with pytest.raises(ProgrammingError, match="cannot modify virtual table"):
        db.execute("DELETE FROM sqlkv_internal.descriptors")
    db.execute("BEGIN")
    db.execute("CREATE TABLE t2 (a INT PRIMARY KEY)")
    assert ("t2",) in rows(db, "SELECT name FROM sqlkv_internal.namespace")
    db.execute("ROLLBACK")
    assert ("t2",) not in rows(db, "SELECT name FROM sqlkv_internal.namespace")


def test_show_create_table_keeps_generated_identity_foreign_keys_and_expression_indexes(s):
    s.execute("CREATE TABLE p (id INT PRIMARY KEY, code TEXT UNIQUE)")
    s.execute("CREATE TABLE u (id INT GENERATED BY DEFAULT AS IDENTITY (START WITH 5) PRIMARY KEY, "
              "email TEXT NOT NULL, first TEXT, full_name TEXT AS (first || '!') STORED, "
              "lo TEXT GENERATED ALWAYS AS (lower(email)) VIRTUAL, pid INT REFERENCES p ON DELETE CASCADE, "
              "pc TEXT, FOREIGN KEY (pc) REFERENCES p (code))")
    s.execute("CREATE INDEX u_ci ON u (lower(email) DESC, id)")
    ((_, text),) = rows(s, "SHOW CREATE TABLE u")
    for part in ("id INT GENERATED BY DEFAULT AS IDENTITY (START WITH 5", "full_name TEXT GENERATED ALWAYS AS "
                 "(first || '!') STORED", "lo TEXT GENERATED ALWAYS AS (LOWER(email)) VIRTUAL",
                 "INDEX u_ci ((LOWER(email)) DESC, id)",
                 "CONSTRAINT u_pid_fkey FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE",
                 "CONSTRAINT u_pc_fkey FOREIGN KEY (pc) REFERENCES p (code)"):
        assert part in text
    assert "sqlkv_idx_expr" not in text and "auto_index" not in text  # hidden column; the FK makes its index
    s.execute("DROP TABLE u")
    s.execute(text)  # the printed statement makes the same table again
    assert rows(s, "SHOW CREATE TABLE u") == [("u", text)]
    s.execute("INSERT INTO p VALUES (1, 'a')")
    s.execute("INSERT INTO u (email, first, pid, pc) VALUES ('A@B', 'x', 1, 'a')")
    assert rows(s, "SELECT id, full_name, lo FROM u") == [(5, "x!", "a@b")]
    s.execute("DELETE FROM p WHERE id = 1")  # ON DELETE CASCADE came back
    assert rows(s, "SELECT count(*) FROM u") == [(0,)]
