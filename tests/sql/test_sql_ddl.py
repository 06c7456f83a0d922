"""CREATE/DROP TABLE, indexes (backfill), ALTER TABLE, views, information_schema, parsing."""

from __future__ import annotations

import pytest

from sqlkv.errors import IntegrityError, NotSupportedError, ProgrammingError
from sqlkv.sql.parse import parse_statement, split_statements
from sqlkv.sql import Session
from tests.sql.core_support import ENGINES, open_db, rows


@pytest.fixture(params=ENGINES)
def s(request, tmp_path):
    db = open_db(request.param, tmp_path)
    session = Session(db)
    yield session
    session.close()
    db.close()


def test_create_table_types_and_if_not_exists(s):
    s.execute(
        "CREATE TABLE t (a INTEGER, b INT, c BIGINT, d SMALLINT, e FLOAT, f REAL, g DOUBLE PRECISION, "
        "h DECIMAL(10,2), i NUMERIC, j TEXT, k VARCHAR(5), l CHAR(3), m BOOLEAN, n BYTES, o BLOB, p DATE, "
        "q TIMESTAMP, PRIMARY KEY (a))"
    )
    types = rows(s, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't'")
    assert dict(types) == {
        "a": "INT", "b": "INT", "c": "INT", "d": "INT2", "e": "FLOAT", "f": "FLOAT", "g": "FLOAT",
        "h": "DECIMAL(10,2)", "i": "DECIMAL", "j": "TEXT", "k": "VARCHAR(5)", "l": "CHAR(3)", "m": "BOOL",
        "n": "BYTES", "o": "BYTES", "p": "DATE", "q": "TIMESTAMP",
    }
    s.execute("CREATE TABLE IF NOT EXISTS t (x INT)")
    with pytest.raises(ProgrammingError, match='relation "t" already exists'):
        s.execute("CREATE TABLE t (x INT)")
    with pytest.raises(ProgrammingError, match="unknown|type"):
        s.execute("CREATE TABLE bad (x FROBNICATE)")
    with pytest.raises(ProgrammingError, match='column "zz" referenced in foreign key constraint does not exist'):
        s.execute("CREATE TABLE fk (x INT REFERENCES t(zz))")  # foreign keys: test_sql_foreign_keys.py


def test_composite_desc_primary_key_orders_rows(s):
    s.execute("CREATE TABLE t (a INT, b TEXT, v INT, PRIMARY KEY (a DESC, b))")
    s.execute("INSERT INTO t VALUES (1, 'x', 1), (2, 'a', 2), (2, 'b', 3), (3, 'z', 4)")
    assert rows(s, "SELECT a, b FROM t") == [(3, "z"), (2, "a"), (2, "b"), (1, "x")]
    assert rows(s, "SELECT v FROM t WHERE a = 2 AND b = 'b'") == [(3,)]
    with pytest.raises(IntegrityError, match="t_pkey"):
        s.execute("INSERT INTO t VALUES (2, 'a', 9)")


def test_drop_table_removes_data_and_name(s):
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT UNIQUE)")
    s.execute("INSERT INTO t VALUES (1, 'x')")
    s.execute("DROP TABLE t")
    with pytest.raises(ProgrammingError, match='relation "t" does not exist'):
        s.execute("SELECT * FROM t")
    s.execute("DROP TABLE IF EXISTS t")
    with pytest.raises(ProgrammingError):
        s.execute("DROP TABLE t")
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT UNIQUE)")
    assert rows(s, "SELECT * FROM t") == []
    assert rows(s, "SELECT count(*) FROM sqlkv_internal.kv") == [(0,)]


def test_create_index_backfills_and_unique_failure_leaves_nothing(s):
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT, c INT)")
    s.execute("INSERT INTO t VALUES (1, 'x', 1), (2, 'y', 1), (3, NULL, 2), (4, NULL, 3)")
    s.execute("CREATE UNIQUE INDEX t_b ON t (b)")  # NULLs do not conflict
    assert rows(s, "SELECT a FROM t WHERE b = 'y'") == [(2,)]
    with pytest.raises(IntegrityError, match='could not create unique index "t_c"'):
        s.execute("CREATE UNIQUE INDEX t_c ON t (c)")
    assert rows(s, "SELECT index_name FROM information_schema.indexes WHERE table_name = 't' ORDER BY index_name") == [
        ("t_b",), ("t_pkey",)
    ]
    assert rows(s, "SELECT count(*) FROM sqlkv_internal.kv WHERE index_name = 't_c'") == [(0,)]
    s.execute("CREATE INDEX IF NOT EXISTS t_b ON t (c)")
    with pytest.raises(ProgrammingError, match='index "t_b" already exists'):
        s.execute("CREATE INDEX t_b ON t (c)")
    s.execute("CREATE INDEX t_c ON t (c DESC) STORING (b)")
    assert rows(s, "SELECT storing_names, column_names FROM information_schema.indexes WHERE index_name = 't_c'") == [
        ("b", "c DESC")
    ]
    assert rows(s, "CHECK DATABASE") == []
    s.execute("DROP INDEX t_c")
    s.execute("DROP INDEX IF EXISTS t_c")
    with pytest.raises(ProgrammingError, match='index "t_c" does not exist'):
        s.execute("DROP INDEX t_c")
    assert rows(s, "SELECT count(*) FROM sqlkv_internal.kv WHERE index_name = 't_c'") == [(0,)]


def test_alter_table(s):
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)")
    s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    s.execute("ALTER TABLE t ADD COLUMN c INT")
    s.execute("ALTER TABLE t ADD COLUMN d INT NOT NULL DEFAULT 5")
    assert rows(s, "SELECT * FROM t") == [(1, "x", None, 5), (2, "y", None, 5)]
    with pytest.raises(IntegrityError, match='column "e"'):
        s.execute("ALTER TABLE t ADD COLUMN e INT NOT NULL")
    s.execute("INSERT INTO t (a, b) VALUES (3, 'z')")
    assert rows(s, "SELECT d FROM t WHERE a = 3") == [(5,)]
    s.execute("ALTER TABLE t ADD COLUMN u INT UNIQUE")
    s.execute("UPDATE t SET u = a")
    assert rows(s, "SELECT a FROM t WHERE u = 2") == [(2,)]
    s.execute("ALTER TABLE t RENAME COLUMN b TO bb")
    assert rows(s, "SELECT bb FROM t WHERE a = 1") == [("x",)]
    with pytest.raises(ProgrammingError, match="index"):
        s.execute("ALTER TABLE t DROP COLUMN u")
    with pytest.raises(ProgrammingError, match="primary key"):
        s.execute("ALTER TABLE t DROP COLUMN a")
    s.execute("ALTER TABLE t DROP COLUMN c")
    s.execute("ALTER TABLE t ADD COLUMN c TEXT")  # a new id: old values under the dropped id stay hidden
    assert rows(s, "SELECT c FROM t") == [(None,), (None,), (None,)]
    s.execute("ALTER TABLE t RENAME TO t2")
    assert rows(s, "SELECT count(*) FROM t2") == [(3,)]
    with pytest.raises(ProgrammingError):
        s.execute("SELECT * FROM t")
    assert rows(s, "CHECK DATABASE") == []


def test_rename_without_the_word_column_renames_the_column(s):
    """PostgreSQL's ALTER TABLE t RENAME [COLUMN] a TO b (Alembic leaves COLUMN out): it renamed
    the table to "a" before, and dropped "TO b"."""
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, note TEXT)")
    s.execute("INSERT INTO t VALUES (1, 'x')")
    s.execute("ALTER TABLE t RENAME note TO remark")
    assert rows(s, "SELECT a, remark FROM t") == [(1, "x")]
    # (the etcd re-run of this module may hand it a session that already holds other tables)
    tables = "SELECT table_name FROM information_schema.tables WHERE table_name IN ('t', 'note', 'remark')"
    assert rows(s, tables) == [("t",)]
    with pytest.raises(ProgrammingError, match="note"):
        s.execute("ALTER TABLE t RENAME note TO other")


def test_check_constraint_survives_column_rename(s):
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b INT CHECK (b > 0))")
    s.execute("ALTER TABLE t RENAME COLUMN b TO c")
    with pytest.raises(IntegrityError, match="t_b_check"):
        s.execute("INSERT INTO t VALUES (1, -1)")


def test_views(s):
    s.execute("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)")
    s.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    s.execute("CREATE VIEW v AS SELECT b FROM t WHERE a > 1")
    assert rows(s, "SELECT * FROM v") == [("y",)]
    with pytest.raises(ProgrammingError, match="already exists"):
        s.execute("CREATE VIEW v AS SELECT 1")
    with pytest.raises(ProgrammingError, match="view"):
        s.execute("INSERT INTO v VALUES ('z')")
    assert ("v", "VIEW", ) == rows(s, "SELECT table_name, table_type FROM information_schema.tables WHERE table_name = 'v'")[0]
    s.execute("DROP VIEW v")
    s.execute("DROP VIEW IF EXISTS v")
    with pytest.raises(ProgrammingError):
        s.execute("SELECT * FROM v")


def test_hidden_rowid(s):
    s.execute("CREATE TABLE t (x INT)")
    s.execute("INSERT INTO t VALUES (1), (1)")
    assert rows(s, "SELECT * FROM t") == [(1,), (1,)]
    assert rows(s, "SELECT rowid, x FROM t") == [(1, 1), (2, 1)]


def test_split_statements_and_parse_errors():
    stmts = split_statements("SELECT 1; -- a comment; here\nSELECT 'a;b';\n\n  INSERT INTO t VALUES (1)")
    assert [(x.sql, x.line, x.col) for x in stmts] == [
        ("SELECT 1", 1, 1),
        ("SELECT 'a;b'", 2, 1),
        ("INSERT INTO t VALUES (1)", 4, 3),
    ]
    with pytest.raises(ProgrammingError, match="line 1, column 9"):
        parse_statement("SELECT (1")
    with pytest.raises(ProgrammingError, match="several statements"):
        parse_statement("SELECT 1; SELECT 2")
    p = parse_statement("SELECT ? + ?, ? FROM t WHERE a = ?")
    from sqlglot import exp

    assert p.param_count == 4
    assert sorted(n.meta["param_index"] for n in p.ast.find_all(exp.Placeholder)) == [0, 1, 2, 3]
    add = p.ast.find(exp.Add)
    assert (add.this.meta["param_index"], add.expression.meta["param_index"]) == (0, 1)
    assert p.ast.find(exp.EQ).expression.meta["param_index"] == 3
    assert p.ast.find(exp.EQ).expression.sql() == "?"
    assert parse_statement("UPSERT INTO t VALUES (1)").upsert
    assert parse_statement("CREATE INDEX i ON t (a) STORING (b, c)").storing == ["b", "c"]
    assert parse_statement("RELEASE SAVEPOINT x").savepoint == "x"
    assert parse_statement("ROLLBACK TO x").kind == "ROLLBACK TO"
    e = parse_statement("EXPLAIN ANALYZE SELECT 1")
    assert e.kind == "EXPLAIN" and e.explain_analyze and e.inner.kind == "SELECT"


def test_blob_literals_and_unsupported_statements():
    from sqlglot import exp

    from sqlkv.sql import Database

    ast = parse_statement("SELECT x'3031', X'ff' FROM t WHERE x = 'x'").ast
    assert [h.this for h in ast.find_all(exp.HexString)] == ["3031", "ff"]
    assert Session(Database.open()).execute("SELECT x'3031'").fetchall() == [(b"01",)]
    with pytest.raises(NotSupportedError, match="triggers"):
        parse_statement("CREATE TRIGGER r UPDATE ON t BEGIN SELECT 1; END;")
    with pytest.raises(NotSupportedError, match="REINDEX"):
        parse_statement("REINDEX t1i1")


def test_information_schema_index_columns_checks_and_identity(s):
    s.execute('CREATE TABLE a (id SERIAL PRIMARY KEY, "x, y" TEXT, z INT CONSTRAINT z_pos CHECK (z > 0), '
              'w INT DEFAULT 7, UNIQUE ("x, y"))')
    s.execute('CREATE INDEX a_zi ON a (z DESC, id) STORING ("x, y")')
    s.execute("CREATE TABLE nopk (q INT)")
    assert rows(s, "SELECT column_name, is_identity, column_default FROM information_schema.columns "
                   "WHERE table_name = 'a'") == [("id", "YES", None), ("x, y", "NO", None), ("z", "NO", None),
                                                 ("w", "NO", "7")]
    # a column name holding ", " comes back whole, in key order, then the STORING columns
    assert rows(s, "SELECT index_name, ordinal_position, column_name, is_descending, is_storing "
                   "FROM information_schema.index_columns WHERE table_name = 'a'") == [
        ("a_pkey", 1, "id", False, False),
        ("a_x, y_key", 1, "x, y", False, False),
        ("a_zi", 1, "z", True, False), ("a_zi", 2, "id", False, False), ("a_zi", 3, "x, y", False, True),
    ]
    assert rows(s, "SELECT * FROM information_schema.check_constraints WHERE table_name = 'a'") == [
        ("a", "z_pos", "z > 0")]
    # a table without a primary key: the hidden rowid is its assigned key
    assert rows(s, "SELECT column_name, is_hidden, is_identity FROM information_schema.columns "
                   "WHERE table_name = 'nopk'") == [("q", False, "NO"), ("rowid", True, "YES")]


def test_information_schema_views_holds_the_query_text(s):
    s.execute("CREATE TABLE t (a INT, b TEXT)")
    s.execute("CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1")
    s.execute("CREATE VIEW w AS SELECT count(*) AS n FROM t")
    assert rows(s, "SELECT table_name, view_definition FROM information_schema.views "
                   "WHERE table_name IN ('v', 'w') ORDER BY table_name") == [
        ("v", "SELECT a, b FROM t WHERE a > 1"), ("w", "SELECT COUNT(*) AS n FROM t")]
    assert rows(s, "SELECT table_name FROM information_schema.views WHERE table_name = 'w'") == [("w",)]
    s.execute("DROP VIEW v")
    assert rows(s, "SELECT table_name FROM information_schema.views WHERE table_name IN ('v', 'w')") == [("w",)]


def test_transaction_older_than_a_ddl_never_fills_the_shared_descriptor_cache(s):
    """A transaction whose snapshot predates a committed CREATE INDEX reads the old descriptor
    (right for its snapshot) but must not leave it in the cache other transactions use: a later
    writer would then skip the new index."""
    from sqlkv.catalog.catalog import Catalog

    db = s.db
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    old = db.txn_manager.begin()  # its snapshot is taken now, its catalog made later (a race)
    s.execute("CREATE INDEX t_v ON t (v)")
    assert [i.name for i in Catalog(old, db.descriptors).get_table("t").indexes] == []
    old.rollback()
    s.execute("INSERT INTO t VALUES (1, 'x')")
    assert rows(s, "SELECT k FROM t WHERE v = 'x'") == [(1,)]
    assert rows(s, "CHECK DATABASE") == []
