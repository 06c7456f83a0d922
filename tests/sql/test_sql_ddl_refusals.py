"""DDL never targets virtual tables or reserved schemas, and unimplemented clauses are refused.

Each statement here used to be accepted: an index on ``information_schema.tables`` wrote a
descriptor with id 0, ``CREATE TABLE information_schema.tables`` created ``tables``, and TEMP,
storage parameters, USING HASH, CONCURRENTLY, NULLS FIRST... were silently ignored.
"""

from __future__ import annotations

import pytest

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql import Session
from tests.sql.core_support import open_db, rows


@pytest.fixture
def s(tmp_path):
    db = open_db("lsm", tmp_path)
    session = Session(db)
    session.execute("CREATE TABLE tables (a INT)")  # a user table sharing the virtual table's short name
    yield session
    session.close()
    db.close()


def _table_names(s) -> list[str]:
    return [r[0] for r in rows(s, "SELECT table_name FROM information_schema.tables ORDER BY 1")]


@pytest.mark.parametrize(
    "sql",
    [
        'CREATE INDEX ix ON "information_schema.tables"(table_name)',
        "CREATE INDEX ix ON information_schema.tables(table_name)",
        'CREATE INDEX ix ON "sqlkv_internal.kv"(key)',
        'CREATE UNIQUE INDEX ix ON "information_schema.columns"(column_name)',
        'DROP TABLE "information_schema.tables"',
        "DROP TABLE information_schema.tables",
        "DROP TABLE IF EXISTS information_schema.tables",
        'ALTER TABLE "sqlkv_internal.kv" ADD COLUMN z INT',
        "ALTER TABLE information_schema.tables RENAME TO x",
        'INSERT INTO "information_schema.tables" VALUES (1)',
        'DELETE FROM "sqlkv_internal.kv"',
        'UPDATE "information_schema.tables" SET table_name = 1',
        'TRUNCATE "information_schema.tables"',
    ],
)
def test_no_ddl_or_dml_on_virtual_tables(s, sql):
    before = _table_names(s)
    with pytest.raises(ProgrammingError, match="virtual table|reserved|cannot modify"):
        s.execute(sql)
    assert _table_names(s) == before
    assert rows(s, "SELECT count(*) FROM tables") == [(0,)]  # the user's table was not touched


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE information_schema.tables (a INT)",
        "CREATE TABLE sqlkv_internal.mine (a INT)",
        'CREATE TABLE "information_schema.x" (a INT)',
        "CREATE VIEW information_schema.v AS SELECT 1",
        "ALTER TABLE tables RENAME TO information_schema.t2",
    ],
)
def test_names_in_reserved_schemas_are_refused_not_stripped(s, sql):
    with pytest.raises(ProgrammingError, match="reserved"):
        s.execute(sql)
    assert _table_names(s) == ["tables"]


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE foo.bar (a INT)",
        "CREATE TABLE public.bar (a INT)",
        "DROP TABLE foo.tables",
        "DROP TABLE IF EXISTS public.tables",
        "CREATE INDEX ix ON foo.tables (a)",
        "ALTER TABLE foo.tables ADD COLUMN b INT",
        "CREATE VIEW foo.v AS SELECT 1",
        "DROP INDEX foo.tables_pkey",
    ],
)
def test_other_schemas_are_refused_not_stripped(s, sql):
    # queries refuse public.t too ("relation does not exist"): one unnamed schema
    with pytest.raises(NotSupportedError, match='schema "(foo|public)"'):
        s.execute(sql)
    assert _table_names(s) == ["tables"]
    assert [r[0] for r in rows(s, "SELECT column_name FROM information_schema.columns WHERE table_name = 'tables'")] == ["a", "rowid"]


def test_virtual_index_refusal_survives_reopen(tmp_path):
    db = open_db("lsm", tmp_path)
    s = Session(db)
    with pytest.raises(ProgrammingError):
        s.execute('CREATE INDEX ix ON "sqlkv_internal.kv"(key)')
    s.close()
    db.close()
    db = open_db("lsm", tmp_path)
    s = Session(db)
    assert _table_names(s) == []
    s.close()
    db.close()


@pytest.mark.parametrize(
    "sql, clause",
    [
        ("CREATE TEMP TABLE x (a INT)", "TEMP"),
        ("CREATE TEMPORARY TABLE x (a INT)", "TEMP"),
        ("CREATE TEMP VIEW x AS SELECT 1", "TEMP"),
        ("CREATE UNLOGGED TABLE x (a INT)", "UNLOGGED"),
        ("CREATE TABLE x (a INT) WITH (fillfactor = 70)", "fillfactor"),
        ("CREATE TABLE x (a INT) WITH (ttl_expire_after = '1 day')", "ttl_expire_after"),
        ("CREATE TABLE x (a INT, b INT, FAMILY f1 (a, b), FAMILY f2 (b))", "two families"),
        ("CREATE TABLE x (a TEXT COLLATE \"de_DE\")", "COLLATE"),
        ("CREATE INDEX x ON tables USING HASH (a)", "HASH"),
        ("CREATE INDEX x ON tables USING gin (a)", "only ARRAY and JSONB columns"),  # a is not one
        ("CREATE INDEX x ON tables USING brin (a)", "BRIN"),
        ("CREATE INDEX CONCURRENTLY x ON tables (a)", "CONCURRENTLY"),
        ("CREATE INDEX x ON tables (a NULLS FIRST)", "NULLS"),
        ("CREATE INDEX x ON tables (a DESC NULLS LAST)", "NULLS"),
        ("CREATE INDEX x ON tables (a) WITH (fillfactor = 70)", "storage parameters"),
        ("CREATE INDEX x ON tables (a) TABLESPACE pg_default", "TABLESPACE"),
        ("CREATE OR REPLACE TABLE x (a INT)", "OR REPLACE"),
        ("CREATE OR REPLACE INDEX x ON tables (a)", "OR REPLACE"),
        ("CREATE TABLE x (a INT) PARTITION BY RANGE (a)", "PARTITION"),
        ("CREATE TABLE x (a INT) INHERITS (tables)", "INHERITS"),
        ("CREATE TABLE x (a INT, PRIMARY KEY (a) USING HASH)", "HASH"),
        ("CREATE TABLE x (a INT, UNIQUE (a) DEFERRABLE)", "DEFERRABLE"),
        ("CREATE TABLE x (a INT PRIMARY KEY DEFERRABLE)", "DEFERRABLE"),
        ("CREATE TABLE x (a INT, UNIQUE NULLS NOT DISTINCT (a))", "NULLS NOT DISTINCT"),
        ("CREATE TABLE x (a INT UNIQUE NULLS NOT DISTINCT)", "NULLS NOT DISTINCT"),
        ("CREATE TABLE x (a INT, UNIQUE (a) INCLUDE (a))", "INCLUDE"),
        ("CREATE TABLE x (a INT, CONSTRAINT u UNIQUE (a) WITH (fillfactor = 50))", "fillfactor"),
    ],
)
def test_unimplemented_clauses_are_refused(s, sql, clause):
    with pytest.raises((NotSupportedError, ProgrammingError), match=clause):
        s.execute(sql)
    assert _table_names(s) == ["tables"]
    assert rows(s, "SELECT count(*) FROM information_schema.indexes WHERE index_name = 'x'") == [(0,)]


def test_implemented_variants_still_work(s):
    s.execute('CREATE TABLE c (a TEXT COLLATE "C", b INT, FAMILY f1 (a), FAMILY f2 (b))')
    s.execute("CREATE INDEX ia ON c USING btree (a DESC)")
    s.execute("CREATE INDEX ib ON c (b) STORING (a)")
    s.execute("INSERT INTO c VALUES ('x', 1), ('y', 2)")
    assert rows(s, "SELECT a FROM c WHERE a >= 'x' ORDER BY a DESC") == [("y",), ("x",)]


@pytest.mark.parametrize(
    "sql, clause",
    [
        ("DROP INDEX tables_pkey CASCADE", "CASCADE"),
        ("ALTER TABLE tables DROP COLUMN a CASCADE", "CASCADE"),
        ("TRUNCATE tables CASCADE", "CASCADE"),
        ("TRUNCATE tables CONTINUE IDENTITY", "CONTINUE IDENTITY"),
        ("INSERT INTO tables VALUES (1) ON CONFLICT (a) WHERE a > 0 DO NOTHING", "ON CONFLICT"),
        ("DELETE tables FROM tables", "multi-table DELETE"),
        ("DELETE x, y FROM tables", "multi-table DELETE"),  # x, y were dropped: t lost its rows
        # the WITH (...) was read as a second constraint of the same name: "already exists"
        ("ALTER TABLE tables ADD CONSTRAINT u UNIQUE (a) WITH (fillfactor = 50)", "fillfactor"),
    ],
)
def test_unimplemented_options_of_other_statements_are_refused(s, sql, clause):
    s.execute("INSERT INTO tables VALUES (5)")
    with pytest.raises(NotSupportedError, match=clause):
        s.execute(sql)
    assert rows(s, "SELECT a FROM tables") == [(5,)]


def test_a_stray_id_0_descriptor_from_the_old_bug_is_not_listed(tmp_path):
    """Databases written before the fix hold an index's descriptor under id 0 (the virtual
    table's copy); it must not appear as a table, nor break CHECK DATABASE."""
    import msgpack

    from sqlkv.catalog.catalog import descriptor_key

    db = open_db("lsm", tmp_path)
    s = Session(db, autocommit=False)
    cat = s.catalog()
    stray = cat.get_table("sqlkv_internal.kv")
    cat.txn.put(descriptor_key(0), msgpack.packb(stray.to_dict()))
    s.execute("COMMIT")
    s.close()
    db.close()
    db = open_db("lsm", tmp_path)
    s = Session(db)
    assert _table_names(s) == []
    assert rows(s, "CHECK DATABASE") == []
    s.close()
    db.close()


@pytest.mark.parametrize(
    "sql, clause",
    [
        ("SELECT * FROM tables TABLESAMPLE SYSTEM (10)", "TABLESAMPLE"),
        ("SELECT * FROM tables TABLESAMPLE BERNOULLI (50) REPEATABLE (1)", "TABLESAMPLE"),
        ("SELECT * FROM tables ORDER BY a LIMIT 1 WITH TIES", "WITH TIES"),
        ("SELECT * FROM tables ORDER BY a FETCH FIRST 1 ROWS WITH TIES", "WITH TIES"),
        ("SELECT * FROM tables FETCH FIRST 10 PERCENT ROWS ONLY", "PERCENT"),
        ("SELECT sum(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) "
         "FROM tables", "EXCLUDE CURRENT ROW"),
        ("SELECT sum(a) OVER (ORDER BY a ROWS UNBOUNDED PRECEDING EXCLUDE TIES) FROM tables", "EXCLUDE TIES"),
        ("SELECT sum(a) OVER (ORDER BY a ROWS UNBOUNDED PRECEDING EXCLUDE GROUP) FROM tables", "EXCLUDE GROUP"),
        ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
         "SEARCH DEPTH FIRST BY n SET o SELECT * FROM r", "SEARCH DEPTH"),
        ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
         "CYCLE n SET is_cycle USING path SELECT * FROM r", "CYCLE"),
        ("SELECT * FROM tables@tables_pkey", "index hints"),
        ("SELECT * FROM tables@nosuch WHERE a = 5", "index hints"),
        # other dialects' clauses sqlglot reads (they filtered, grouped or sorted nothing)
        ("SELECT a FROM tables QUALIFY a = 6", "QUALIFY"),
        ("SELECT a, count(*) FROM tables GROUP BY a WITH ROLLUP", "WITH ROLLUP"),
        ("SELECT a, count(*) FROM tables GROUP BY a WITH CUBE", "WITH CUBE"),
        ("SELECT a FROM tables GROUP BY a WITH TOTALS", "WITH TOTALS"),
        ("SELECT a, count(*) FROM tables GROUP BY ALL", "GROUP BY ALL"),
        ("SELECT a FROM tables GROUP BY DISTINCT ROLLUP (a), ROLLUP (a)", "GROUP BY DISTINCT"),
        ("SELECT a FROM tables START WITH a = 5 CONNECT BY PRIOR a = a + 1", "CONNECT BY"),
        ("SELECT a FROM tables SORT BY a", "SORT BY"),
        ("SELECT a FROM tables CLUSTER BY a", "CLUSTER BY"),
        ("SELECT a FROM tables DISTRIBUTE BY a", "DISTRIBUTE BY"),
        ("SELECT a FROM tables WITH (NOLOCK)", "table hints"),
    ],
)
def test_query_clauses_that_would_be_ignored_are_refused(s, sql, clause):
    """Each of these returned every row (or an unexcluded frame, or no extra columns)."""
    s.execute("INSERT INTO tables VALUES (5), (5), (6)")
    with pytest.raises(NotSupportedError, match=clause):
        s.execute(sql)


def test_clauses_with_their_default_meaning_still_run(s):
    s.execute("INSERT INTO tables VALUES (5), (6)")
    assert rows(s, "SELECT sum(a) OVER (ORDER BY a ROWS UNBOUNDED PRECEDING EXCLUDE NO OTHERS) FROM tables") == \
        [(5,), (11,)]
    assert rows(s, "SELECT a FROM tables WHERE a = 6 FOR UPDATE") == [(6,)]  # a plain SERIALIZABLE read
    assert rows(s, "SELECT a FROM tables GROUP BY DISTINCT a ORDER BY a") == [(5,), (6,)]  # no grouping sets to merge
