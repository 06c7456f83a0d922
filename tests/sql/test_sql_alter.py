"""ALTER TABLE: ALTER COLUMN (SET/DROP DEFAULT, SET/DROP NOT NULL, TYPE with a rewrite when
the encoding changes), ADD/DROP/RENAME CONSTRAINT (CHECK, UNIQUE), and CockroachDB's ALTER
PRIMARY KEY USING COLUMNS (a rewrite of the table's keys). SQLite has none of these, so the
expectations are hand-computed (PostgreSQL's and CockroachDB's behaviour); after each change
CHECK DATABASE must find the rows and index entries consistent."""

from __future__ import annotations

import pytest

from sqlkv.errors import (
    CheckViolation,
    DataError,
    NotNullViolation,
    NotSupportedError,
    ProgrammingError,
    UndefinedObject,
    UniqueViolation,
)
from sqlkv.sql.session import Database, Session
from tests.sql.core_support import open_db, rows


@pytest.fixture
def s():
    db = Database.open(":memory:")
    yield Session(db)
    db.close()


def consistent(s: Session) -> None:
    assert rows(s, "CHECK DATABASE") == []


def plan(s: Session, sql: str) -> str:
    return "\n".join(r[0] for r in rows(s, "EXPLAIN " + sql))


def test_set_and_drop_default(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, n INT)")
    s.execute("ALTER TABLE t ALTER COLUMN n SET DEFAULT 7 * 6")
    s.execute("INSERT INTO t (id) VALUES (1)")
    s.execute("ALTER TABLE t ALTER n DROP DEFAULT")
    s.execute("INSERT INTO t (id) VALUES (2)")
    assert rows(s, "SELECT * FROM t ORDER BY id") == [(1, 42), (2, None)]
    assert rows(s, "SELECT column_default FROM information_schema.columns WHERE column_name = 'n'") == [(None,)]
    with pytest.raises(ProgrammingError, match="cannot reference columns"):
        s.execute("ALTER TABLE t ALTER COLUMN n SET DEFAULT id + 1")
    with pytest.raises(DataError):
        s.execute("ALTER TABLE t ALTER COLUMN n SET DEFAULT 'text'")


def test_set_not_null_validates_and_drop_not_null(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, n INT)")
    s.execute("INSERT INTO t VALUES (1, 1), (2, NULL)")
    with pytest.raises(NotNullViolation, match='column "n" of relation "t" contains null values'):
        s.execute("ALTER TABLE t ALTER COLUMN n SET NOT NULL")
    s.execute("INSERT INTO t VALUES (3, NULL)")  # the failed ALTER left n nullable
    s.execute("UPDATE t SET n = 0 WHERE n IS NULL")
    s.execute("ALTER TABLE t ALTER COLUMN n SET NOT NULL")
    with pytest.raises(NotNullViolation):
        s.execute("INSERT INTO t VALUES (4, NULL)")
    s.execute("ALTER TABLE t ALTER COLUMN n DROP NOT NULL")
    s.execute("INSERT INTO t VALUES (4, NULL)")
    with pytest.raises(ProgrammingError, match="primary key"):
        s.execute("ALTER TABLE t ALTER COLUMN id DROP NOT NULL")


def test_alter_type_rewrites_rows_and_index_entries(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, n INT, f FLOAT, s VARCHAR(10))")
    s.execute("CREATE INDEX t_n ON t (n)")
    s.execute("INSERT INTO t VALUES (1, 10, 2.0, 'abc'), (2, 20, 1.5, 'hello')")
    s.execute("ALTER TABLE t ALTER COLUMN n TYPE TEXT USING n::text || 'x'")
    assert rows(s, "SELECT id FROM t WHERE n = '20x'") == [(2,)]
    assert plan(s, "SELECT id FROM t WHERE n = '20x'").endswith('scan t@t_n (index-only) /Table/100/2/"20x"')
    consistent(s)
    with pytest.raises(DataError, match='"f"'):
        s.execute("ALTER TABLE t ALTER COLUMN f TYPE INT")  # 1.5 would lose its fraction
    assert rows(s, "SELECT f FROM t ORDER BY id") == [(2.0,), (1.5,)]
    s.execute("UPDATE t SET f = 3.0 WHERE id = 2")
    s.execute("ALTER TABLE t ALTER COLUMN f SET DATA TYPE INT")
    assert rows(s, "SELECT f, typeof(f) FROM t ORDER BY id") == [(2, "int"), (3, "int")]
    with pytest.raises(DataError, match='"s"'):
        s.execute("ALTER TABLE t ALTER COLUMN s TYPE VARCHAR(3)")  # 'hello' is too long
    s.execute("ALTER TABLE t ALTER COLUMN s TYPE VARCHAR(20)")  # same encoding: no rewrite
    with pytest.raises(DataError):
        s.execute("ALTER TABLE t ALTER COLUMN s TYPE INT")  # text never converts to a number silently
    s.execute("ALTER TABLE t ALTER COLUMN id TYPE FLOAT")  # a key column: the primary key is rewritten
    assert rows(s, "SELECT id, n FROM t WHERE id = 2.0") == [(2.0, "20x")]
    consistent(s)
    s.execute("CREATE TABLE big (v INT)")
    s.execute("INSERT INTO big VALUES (9007199254740993)")
    with pytest.raises(DataError, match="without loss"):
        s.execute("ALTER TABLE big ALTER COLUMN v TYPE FLOAT")


def test_alter_type_to_text_needs_no_using_other_conversions_hint_it(s):
    # PostgreSQL: int -> text is an assignment cast (no USING); text -> int needs USING
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, n INT, s TEXT, d DATE)")
    s.execute("CREATE INDEX t_n ON t (n)")
    s.execute("INSERT INTO t VALUES (1, 10, '5', '2024-01-31'), (2, NULL, 'x', NULL)")
    s.execute("ALTER TABLE t ALTER COLUMN n TYPE TEXT")
    s.execute("ALTER TABLE t ALTER COLUMN d TYPE VARCHAR(10)")
    assert rows(s, "SELECT id, n, d FROM t WHERE n = '10'") == [(1, "10", "2024-01-31")]
    assert plan(s, "SELECT id FROM t WHERE n = '10'").endswith('/Table/100/2/"10"')
    consistent(s)
    with pytest.raises(DataError, match='cannot be cast automatically.*USING'):
        s.execute("ALTER TABLE t ALTER COLUMN s TYPE INT")
    with pytest.raises(DataError, match="too long"):
        s.execute("ALTER TABLE t ALTER COLUMN n TYPE VARCHAR(1)")


def test_alter_decimal_scale_rewrites_the_values(s):
    # same kind, new scale: the stored values are rounded (PostgreSQL: 2.25 -> numeric(10,1) is 2.3)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL(10,2))")
    s.execute("CREATE INDEX t_d ON t (d) ")
    s.execute("INSERT INTO t VALUES (1, 2.25), (2, -1.05)")
    s.execute("ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(10,1)")
    assert [str(r[0]) for r in rows(s, "SELECT d FROM t ORDER BY id")] == ["2.3", "-1.1"]
    assert rows(s, "SELECT id FROM t WHERE d = 2.3") == [(1,)]
    s.execute("ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(10,3)")
    assert [str(r[0]) for r in rows(s, "SELECT d FROM t ORDER BY id")] == ["2.300", "-1.100"]
    consistent(s)
    with pytest.raises(DataError):
        s.execute("ALTER TABLE t ALTER COLUMN d TYPE DECIMAL(3,3)")


def test_add_drop_rename_constraints(s):
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)")
    s.execute("INSERT INTO t VALUES (1, 1, 5), (2, 1, -5)")
    with pytest.raises(CheckViolation, match='check constraint "b_pos" of relation "t" is violated by some row'):
        s.execute("ALTER TABLE t ADD CONSTRAINT b_pos CHECK (b > 0)")
    with pytest.raises(UniqueViolation, match=r"Key \(a\)=\(1\) is duplicated"):
        s.execute("ALTER TABLE t ADD CONSTRAINT a_uq UNIQUE (a)")
    s.execute("UPDATE t SET a = 2, b = 6 WHERE id = 2")
    s.execute("ALTER TABLE t ADD CONSTRAINT b_pos CHECK (b > 0)")
    s.execute("ALTER TABLE t ADD CONSTRAINT a_uq UNIQUE (a)")
    consistent(s)
    with pytest.raises(NotSupportedError, match="NOT VALID"):
        s.execute("ALTER TABLE t ADD CONSTRAINT b_pos2 CHECK (b > 0) NOT VALID")
    with pytest.raises(ProgrammingError, match='constraint "b_pos" for relation "t" already exists'):
        s.execute("ALTER TABLE t ADD CONSTRAINT b_pos CHECK (b < 100)")
    s.execute("ALTER TABLE t RENAME CONSTRAINT b_pos TO b_positive")
    s.execute("ALTER TABLE t RENAME CONSTRAINT a_uq TO a_unique")
    with pytest.raises(CheckViolation, match='"b_positive"'):
        s.execute("INSERT INTO t VALUES (3, 3, -1)")
    with pytest.raises(UniqueViolation, match='"a_unique"'):
        s.execute("INSERT INTO t VALUES (3, 1, 1)")
    with pytest.raises(UndefinedObject):
        s.execute("ALTER TABLE t RENAME CONSTRAINT b_pos TO x")
    s.execute("ALTER TABLE t DROP CONSTRAINT b_positive")
    s.execute("ALTER TABLE t DROP CONSTRAINT a_unique")
    s.execute("ALTER TABLE t DROP CONSTRAINT IF EXISTS a_unique")
    s.execute("INSERT INTO t VALUES (3, 1, -1)")
    assert rows(s, "SELECT count(*) FROM information_schema.table_constraints WHERE table_name = 't'") == [(1,)]
    with pytest.raises(CheckViolation, match='"t_check1"'):
        s.execute("ALTER TABLE t ADD CHECK (b > 0 AND a > 0)")  # unnamed: PostgreSQL-style default name
    s.execute("ALTER TABLE t ADD CHECK (a > 0)")
    with pytest.raises(CheckViolation, match='"t_check1"'):
        s.execute("INSERT INTO t VALUES (4, 0, 0)")
    consistent(s)


def test_alter_primary_key_rewrites_keys(s):
    s.execute("CREATE TABLE u (id INT PRIMARY KEY, email TEXT NOT NULL, n INT)")
    s.execute("CREATE INDEX u_n ON u (n)")
    s.execute("INSERT INTO u VALUES (1, 'b@x', 10), (2, 'a@x', 20)")
    s.execute("ALTER TABLE u ALTER PRIMARY KEY USING COLUMNS (email DESC)")
    assert rows(s, "SELECT * FROM u") == [(1, "b@x", 10), (2, "a@x", 20)]  # descending email order
    assert "get u@u_pkey" in plan(s, "SELECT * FROM u WHERE email = 'a@x'")
    keys = [r[0] for r in rows(s, "SELECT key FROM sqlkv_internal.kv WHERE table_name = 'u' AND index_name = 'u_pkey'")]
    assert keys == ['/u/u_pkey/~"b@x"/0', '/u/u_pkey/~"a@x"/0']
    with pytest.raises(UniqueViolation, match='"u_id_key"'):  # the old key stays unique
        s.execute("INSERT INTO u VALUES (1, 'c@x', 1)")
    with pytest.raises(UniqueViolation, match='"u_pkey"'):
        s.execute("INSERT INTO u VALUES (3, 'a@x', 1)")
    assert rows(s, "SELECT email FROM u WHERE n = 20") == [("a@x",)]
    consistent(s)
    s.execute("CREATE TABLE r (a INT, b INT)")  # hidden rowid key
    s.execute("INSERT INTO r VALUES (1, 1), (1, 2), (NULL, 3)")
    with pytest.raises(NotNullViolation):
        s.execute("ALTER TABLE r ALTER PRIMARY KEY USING COLUMNS (a, b)")
    s.execute("DELETE FROM r WHERE a IS NULL")
    with pytest.raises(UniqueViolation, match=r'"r_pkey" \(Key \(a\)=\(1\)'):
        s.execute("ALTER TABLE r ALTER PRIMARY KEY USING COLUMNS (a)")
    assert rows(s, "SELECT a, b FROM r ORDER BY b") == [(1, 1), (1, 2)]  # the failure changed nothing
    s.execute("ALTER TABLE r ALTER PRIMARY KEY USING COLUMNS (b)")
    assert rows(s, "SELECT column_name FROM information_schema.columns WHERE table_name = 'r'") == [("a",), ("b",)]
    consistent(s)
    # generated columns cannot be key columns, as in CREATE TABLE (ALTER PRIMARY KEY took them)
    s.execute("CREATE TABLE g (id INT PRIMARY KEY, n INT NOT NULL, st INT AS (n * 2) STORED, vi INT AS (n + 1))")
    s.execute("INSERT INTO g (id, n) VALUES (1, 3)")
    for cols in ("st", "n, vi"):
        with pytest.raises(NotSupportedError, match="generated column cannot be part of the primary key"):
            s.execute(f"ALTER TABLE g ALTER PRIMARY KEY USING COLUMNS ({cols})")
    assert rows(s, "SELECT column_names FROM information_schema.indexes WHERE index_name = 'g_pkey'") == [("id",)]


def test_alter_primary_key_of_a_referenced_table(s):
    s.execute("CREATE TABLE p (id INT PRIMARY KEY, code TEXT NOT NULL)")
    s.execute("CREATE TABLE c (pid INT REFERENCES p ON DELETE CASCADE)")
    s.execute("INSERT INTO p VALUES (1, 'one'), (2, 'two')")
    s.execute("INSERT INTO c VALUES (1), (2)")
    s.execute("ALTER TABLE p ALTER PRIMARY KEY USING COLUMNS (code)")
    s.execute("DELETE FROM p WHERE code = 'one'")  # the FK now resolves through p_id_key
    assert rows(s, "SELECT pid FROM c") == [(2,)]
    from sqlkv.errors import ForeignKeyViolation
    with pytest.raises(ForeignKeyViolation):
        s.execute("INSERT INTO c VALUES (7)")
    consistent(s)


def test_changes_survive_reopen(tmp_path):
    db = open_db("lsm", tmp_path)
    s = Session(db)
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, e TEXT NOT NULL, n INT CONSTRAINT n_pos CHECK (n > 0))")
    s.execute("INSERT INTO t VALUES (1, 'x', 1)")
    s.execute("ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (e)")
    s.execute("ALTER TABLE t RENAME CONSTRAINT n_pos TO n_positive")
    s.execute("ALTER TABLE t ALTER COLUMN n SET DEFAULT 5")
    db.close()
    db = open_db("lsm", tmp_path)
    s = Session(db)
    s.execute("INSERT INTO t (id, e) VALUES (2, 'y')")
    assert rows(s, "SELECT * FROM t") == [(1, "x", 1), (2, "y", 5)]
    with pytest.raises(CheckViolation, match="n_positive"):
        s.execute("INSERT INTO t VALUES (3, 'z', 0)")
    consistent(s)
    db.close()
