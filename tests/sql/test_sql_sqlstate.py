"""SQLSTATE codes: each error class a client acts on carries PostgreSQL's specific code, in
``exc.sqlstate`` and at the end of the message, and is a subclass of the PEP 249 class it
was before (``except IntegrityError`` keeps working)."""

from __future__ import annotations

import pytest

import sqlkv
from sqlkv import errors

CASES = [
    ("INSERT INTO t VALUES (1, 1, 'a')", errors.UniqueViolation, errors.IntegrityError, "23505"),
    ("INSERT INTO t VALUES (2, 1, 'b')", errors.UniqueViolation, errors.IntegrityError, "23505"),  # unique index
    ("INSERT INTO c VALUES (5)", errors.ForeignKeyViolation, errors.IntegrityError, "23503"),
    ("INSERT INTO t VALUES (3, 3, NULL)", errors.NotNullViolation, errors.IntegrityError, "23502"),
    ("INSERT INTO t VALUES (4, -1, 'x')", errors.CheckViolation, errors.IntegrityError, "23514"),
    ("SELECT * FROM nope", errors.UndefinedTable, errors.ProgrammingError, "42P01"),
    ("DROP TABLE nope", errors.UndefinedTable, errors.ProgrammingError, "42P01"),
    ("SELECT nope FROM t", errors.UndefinedColumn, errors.ProgrammingError, "42703"),
    ("UPDATE t SET nope = 1", errors.UndefinedColumn, errors.ProgrammingError, "42703"),
    ("SELEC 1", errors.SqlSyntaxError, errors.ProgrammingError, "42601"),
    ("SELECT (1", errors.SqlSyntaxError, errors.ProgrammingError, "42601"),
    ("SELECT 9223372036854775807 + 1", errors.NumericValueOutOfRange, errors.DataError, "22003"),
    ("SELECT frobnicate(1)", errors.UndefinedFunction, errors.ProgrammingError, "42883"),
    ("ALTER TABLE t DROP CONSTRAINT nope", errors.UndefinedObject, errors.ProgrammingError, "42704"),
    ("DROP TABLE t", errors.DependentObjectsStillExist, errors.ProgrammingError, "2BP01"),
    ("CREATE TABLE t (x INT)", errors.DuplicateTable, errors.ProgrammingError, "42P07"),
    ("CREATE INDEX t_u_key ON t (s)", errors.DuplicateTable, errors.ProgrammingError, "42P07"),
    ("ALTER TABLE t ADD COLUMN u INT", errors.DuplicateColumn, errors.ProgrammingError, "42701"),
    ("ALTER TABLE t ADD CONSTRAINT t_u_check CHECK (u < 9)", errors.DuplicateObject, errors.ProgrammingError, "42710"),
    ("INSERT INTO kv VALUES (1, 70000)", errors.NumericValueOutOfRange, errors.DataError, "22003"),  # INT2 column
    ("SELECT CAST(70000 AS INT2)", errors.NumericValueOutOfRange, errors.DataError, "22003"),
    ("UPDATE kv SET k.v = 9", errors.UndefinedColumn, errors.ProgrammingError, "42703"),  # no table named k
    ("CREATE TABLE g (a INT, b TEXT AS (a + 1) STORED)", errors.DatatypeMismatch, errors.ProgrammingError, "42804"),
]


@pytest.fixture(scope="module")
def cur():
    conn = sqlkv.connect(":memory:")
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY, u INT UNIQUE CHECK (u >= 0), s TEXT NOT NULL)")
    cur.execute("CREATE TABLE c (tid INT REFERENCES t)")
    cur.execute("CREATE TABLE kv (k INT PRIMARY KEY, v INT2)")
    cur.execute("INSERT INTO t VALUES (1, 1, 'a')")
    yield cur
    conn.close()


@pytest.mark.parametrize("sql, cls, base, code", CASES, ids=[c[0] for c in CASES])
def test_error_carries_specific_sqlstate(cur, sql, cls, base, code):
    with pytest.raises(cls) as e:
        cur.execute(sql)
        cur.fetchall()  # a SELECT's rows stream: its errors may surface while fetching
    assert isinstance(e.value, base)
    assert e.value.sqlstate == code
    assert str(e.value).endswith(f"(SQLSTATE {code})")
    assert str(e.value).count("SQLSTATE") == 1


def test_serialization_failure_is_40001(tmp_path):
    a = sqlkv.connect(str(tmp_path / "db"))
    b = sqlkv.connect(str(tmp_path / "db"))
    a.cursor().execute("CREATE TABLE k (id INT PRIMARY KEY, v INT)")
    a.cursor().execute("INSERT INTO k VALUES (1, 0)")
    a.commit()
    ca, cb = a.cursor(), b.cursor()
    ca.execute("UPDATE k SET v = v + 1 WHERE id = 1")
    cb.execute("UPDATE k SET v = v + 1 WHERE id = 1")
    a.commit()
    with pytest.raises(errors.SerializationFailure) as e:
        b.commit()
    assert e.value.sqlstate == "40001" and "(SQLSTATE 40001)" in str(e.value)
    a.close()
    b.close()


def test_broad_classes_keep_class_codes():
    assert errors.IntegrityError("x").sqlstate == "23000" and str(errors.IntegrityError("x")) == "x"
    assert errors.ProgrammingError("x").sqlstate == "42000"
    assert issubclass(errors.SqlSyntaxError, errors.ProgrammingError) and not issubclass(errors.SqlSyntaxError, SyntaxError)
