"""Single-table SELECT, aggregates, windows, set operations, CTEs and subqueries vs sqlite3."""

from __future__ import annotations

import pytest

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError

SINGLE_TABLE = [
    "SELECT * FROM emp",
    "SELECT e.* FROM emp e",
    "SELECT name, salary * 2 AS double_pay, salary + boss FROM emp",
    "SELECT id FROM emp WHERE dept = 10 AND salary > 3000",
    "SELECT id FROM emp WHERE dept = 10 OR boss IS NULL",
    "SELECT id FROM emp WHERE salary BETWEEN 2500 AND 4000 AND name LIKE '%a%'",
    "SELECT id, salary FROM emp ORDER BY salary, id",
    "SELECT id, salary FROM emp ORDER BY salary DESC, id",
    "SELECT id, salary FROM emp ORDER BY salary DESC NULLS FIRST, id",
    "SELECT id, salary FROM emp ORDER BY salary NULLS LAST, id",
    "SELECT id, salary AS s FROM emp ORDER BY s, 1 DESC",
    "SELECT id, salary FROM emp ORDER BY 2 DESC, 1",
    "SELECT id FROM emp ORDER BY salary % 3, id",
    "SELECT name FROM emp ORDER BY dept IS NULL, dept DESC, name",
    "SELECT id FROM emp ORDER BY id LIMIT 3",
    "SELECT id FROM emp ORDER BY id LIMIT 3 OFFSET 2",
    "SELECT id FROM emp ORDER BY id DESC LIMIT 100 OFFSET 6",
    "SELECT id FROM emp ORDER BY id LIMIT 0",
    "SELECT DISTINCT dept FROM emp",
    "SELECT DISTINCT dept, salary FROM emp ORDER BY dept, salary",
    "SELECT DISTINCT salary FROM emp ORDER BY salary DESC LIMIT 2",
    "SELECT 1, 'two', 3.5, NULL",
    "SELECT 1 + 2 * 3 AS x WHERE 1 = 1",
    "SELECT 1 WHERE 1 = 0",
    "SELECT column1, column2 FROM (VALUES (1, 'a'), (2, 'b')) WHERE column1 > 1",
]

AGGREGATES = [
    "SELECT count(*), count(salary), count(DISTINCT salary), sum(salary), min(salary), max(salary) FROM emp",
    "SELECT avg(salary), total(salary) FROM emp",
    "SELECT count(*), sum(salary), avg(salary), min(name), total(salary) FROM emp WHERE id > 100",
    "SELECT dept, count(*), sum(salary) FROM emp GROUP BY dept",
    "SELECT dept, count(*) AS n FROM emp GROUP BY dept HAVING count(*) > 1 ORDER BY n DESC, dept",
    "SELECT dept, max(salary) - min(salary) FROM emp GROUP BY dept HAVING sum(salary) > 3000",
    "SELECT dept % 20, count(*) FROM emp GROUP BY dept % 20",
    "SELECT dept, count(*) FROM emp GROUP BY 1 ORDER BY 2 DESC, 1",
    "SELECT salary > 3000 AS rich, count(*) FROM emp GROUP BY rich",
    "SELECT count(*) FROM emp HAVING count(*) > 3",
    "SELECT dept, group_concat(name) FROM (SELECT * FROM emp ORDER BY name) GROUP BY dept",
    "SELECT dept, group_concat(name, '|') FROM (SELECT * FROM emp ORDER BY name) GROUP BY dept",
    "SELECT count(DISTINCT dept), sum(DISTINCT salary), avg(DISTINCT salary) FROM emp",
    "SELECT dept, avg(salary) FROM emp GROUP BY dept ORDER BY avg(salary) DESC, dept",
    "SELECT DISTINCT count(*) FROM emp GROUP BY dept",
    "SELECT boss, dept, count(*) FROM emp GROUP BY boss, dept",
]

WINDOWS = [
    "SELECT id, row_number() OVER (ORDER BY id) FROM emp",
    "SELECT id, rank() OVER (ORDER BY salary DESC), dense_rank() OVER (ORDER BY salary DESC) FROM emp",
    "SELECT id, rank() OVER (PARTITION BY dept ORDER BY salary) FROM emp",
    "SELECT id, sum(salary) OVER (PARTITION BY dept) FROM emp",
    "SELECT id, sum(salary) OVER (ORDER BY id) FROM emp",
    "SELECT id, sum(salary) OVER (ORDER BY salary) FROM emp",
    "SELECT id, avg(salary) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM emp",
    "SELECT id, count(*) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM emp",
    "SELECT id, lag(salary) OVER (ORDER BY id), lead(salary, 2, -1) OVER (ORDER BY id) FROM emp",
    "SELECT id, first_value(name) OVER (PARTITION BY dept ORDER BY id), "
    "last_value(name) OVER (PARTITION BY dept ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM emp",
    "SELECT id, ntile(3) OVER (ORDER BY id) FROM emp",
    "SELECT dept, sum(count(*)) OVER () FROM emp GROUP BY dept",
    "SELECT id, min(salary) OVER (PARTITION BY dept ORDER BY id), max(salary) OVER (PARTITION BY dept ORDER BY id) FROM emp",
]

SETOPS_CTES = [
    "SELECT dept FROM emp UNION SELECT id FROM dept",
    "SELECT dept FROM emp UNION ALL SELECT id FROM dept",
    "SELECT dept FROM emp INTERSECT SELECT id FROM dept",
    "SELECT dept FROM emp EXCEPT SELECT id FROM dept",
    "SELECT dept FROM emp UNION SELECT id FROM dept ORDER BY 1 DESC LIMIT 3",
    "SELECT id AS k FROM emp EXCEPT SELECT boss FROM emp ORDER BY k",
    "WITH rich AS (SELECT * FROM emp WHERE salary >= 4000) SELECT name FROM rich WHERE dept = 10",
    "WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT * FROM a, b",
    "WITH RECURSIVE cnt(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM cnt WHERE x < 10) SELECT sum(x) FROM cnt",
    "WITH RECURSIVE chain(id, depth) AS (SELECT id, 0 FROM emp WHERE boss IS NULL "
    "UNION ALL SELECT e.id, c.depth + 1 FROM emp e JOIN chain c ON e.boss = c.id) SELECT * FROM chain",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n % 3 + 1 FROM r) SELECT n FROM r",
]

SUBQUERIES = [
    "SELECT name FROM emp WHERE salary = (SELECT max(salary) FROM emp)",
    "SELECT name FROM emp WHERE dept IN (SELECT id FROM dept WHERE city = 'nyc')",
    "SELECT name FROM emp WHERE dept NOT IN (SELECT id FROM dept WHERE city = 'nyc')",
    "SELECT name FROM emp e WHERE EXISTS (SELECT 1 FROM emp s WHERE s.boss = e.id)",
    "SELECT name FROM emp e WHERE NOT EXISTS (SELECT 1 FROM emp s WHERE s.boss = e.id)",
    "SELECT name, (SELECT count(*) FROM emp s WHERE s.boss = e.id) FROM emp e",
    "SELECT name FROM emp e WHERE salary > (SELECT avg(salary) FROM emp s WHERE s.dept = e.dept)",
    "SELECT d, n FROM (SELECT dept AS d, count(*) AS n FROM emp GROUP BY dept) WHERE n > 1",
    "SELECT dname, (SELECT max(salary) FROM emp WHERE emp.dept = dept.id) FROM dept",
]


@pytest.mark.parametrize("sql", SINGLE_TABLE + AGGREGATES + WINDOWS + SETOPS_CTES + SUBQUERIES)
def test_matches_sqlite(pair, sql):
    pair.check(sql)


def test_order_by_is_respected_exactly(pair):
    got = pair.check("SELECT name FROM emp ORDER BY salary DESC, name", ordered=True)
    assert len(got) == 8


def test_limit_and_offset_parameters(pair):
    sql = "SELECT id FROM emp ORDER BY id LIMIT ? OFFSET ?"
    for lim, off in [(2, 0), (3, 4), (0, 0), (10, 7)]:
        pair.check(sql, (lim, off), ordered=True)


@pytest.mark.parametrize("standard, sqlite_form", [
    ("SELECT id FROM emp ORDER BY id FETCH FIRST 3 ROWS ONLY", "SELECT id FROM emp ORDER BY id LIMIT 3"),
    ("SELECT id FROM emp ORDER BY id DESC FETCH NEXT ROW ONLY", "SELECT id FROM emp ORDER BY id DESC LIMIT 1"),
    ("SELECT id FROM emp ORDER BY id OFFSET 2 ROWS FETCH FIRST 2 ROWS ONLY", "SELECT id FROM emp ORDER BY id LIMIT 2 OFFSET 2"),
    ("SELECT id FROM emp ORDER BY id LIMIT ALL", "SELECT id FROM emp ORDER BY id"),
    ("SELECT id FROM emp ORDER BY id LIMIT ALL OFFSET 3", "SELECT id FROM emp ORDER BY id LIMIT -1 OFFSET 3"),
    ("SELECT id FROM (SELECT id FROM emp ORDER BY id DESC FETCH FIRST 4 ROWS ONLY) e ORDER BY id",
     "SELECT id FROM (SELECT id FROM emp ORDER BY id DESC LIMIT 4) e ORDER BY id"),
    ("SELECT id FROM emp UNION SELECT id FROM dept ORDER BY 1 FETCH FIRST 2 ROWS ONLY",
     "SELECT id FROM emp UNION SELECT id FROM dept ORDER BY 1 LIMIT 2"),
])
def test_fetch_first_and_limit_all_are_limits(pair, standard, sqlite_form):
    """SQL's FETCH FIRST n ROWS ONLY and PostgreSQL's LIMIT ALL (sqlite3 spells them LIMIT n and
    no limit); they used to be refused or read ALL as a column."""
    assert pair.ours(standard) == pair.lite.execute(sqlite_form).fetchall()


def test_fetch_with_ties_is_refused_not_ignored(pair):
    with pytest.raises(NotSupportedError, match="WITH TIES"):
        pair.ours("SELECT id FROM emp ORDER BY salary FETCH FIRST 2 ROWS WITH TIES")


def test_limit_must_be_an_integer(pair):
    with pytest.raises(DataError):
        pair.ours("SELECT id FROM emp LIMIT 'x'")


def test_output_column_names(pair):
    assert pair.columns("SELECT id, name AS who, salary + 1 FROM emp") == ["id", "who", "salary + 1"]
    assert pair.columns("SELECT * FROM dept") == ["id", "dname", "city"]
    assert pair.columns("SELECT d.*, 1 AS one FROM dept d") == ["id", "dname", "city", "one"]


def test_errors_name_the_problem(pair):
    with pytest.raises(ProgrammingError, match="nope"):
        pair.ours("SELECT nope FROM emp")
    with pytest.raises(ProgrammingError, match="missing"):
        pair.ours("SELECT * FROM missing")
    with pytest.raises(ProgrammingError, match="out of range"):
        pair.ours("SELECT id FROM emp ORDER BY 3")
    with pytest.raises(ProgrammingError, match="ambiguous"):
        pair.ours("SELECT id FROM emp, dept")
    with pytest.raises(ProgrammingError, match="same number of columns"):
        pair.ours("SELECT 1 UNION SELECT 1, 2")
    with pytest.raises(ProgrammingError, match="aggregate"):
        pair.ours("SELECT id FROM emp WHERE count(*) > 1")


def test_sum_overflow_is_a_data_error(pair):
    pair.both("CREATE TABLE big (v INTEGER)")
    pair.many("INSERT INTO big VALUES (?)", [(2 ** 62,), (2 ** 62,)])
    with pytest.raises(DataError, match="overflow"):
        pair.ours("SELECT sum(v) FROM big")


def test_recursive_union_terminates_on_cycles(pair):
    rows = pair.ours("WITH RECURSIVE walk(n) AS (SELECT 1 UNION SELECT (n % 4) + 1 FROM walk) SELECT n FROM walk")
    assert sorted(rows) == [(1,), (2,), (3,), (4,)]


def test_plan_is_reusable_across_executions(pair):
    sql = "SELECT dept, count(*) FROM emp WHERE salary > ? GROUP BY dept"
    for bound in (0, 3000, 4500, 3000):
        pair.check(sql, (bound,))


def test_values_column_aliases(pair):
    aliased = pair.ours("SELECT n, s FROM (VALUES (1, 'a'), (2, 'b')) AS v(n, s) WHERE n > 1")
    plain = pair.check("SELECT column1, column2 FROM (VALUES (1, 'a'), (2, 'b')) WHERE column1 > 1")
    assert aliased == plain


def test_views_expand_as_derived_tables(pair):
    pair.both("CREATE VIEW rich AS SELECT id, name, dept FROM emp WHERE salary >= 4000")
    pair.check("SELECT name FROM rich WHERE dept = 10")
    pair.check("SELECT r.name, d.dname FROM rich r JOIN dept d ON r.dept = d.id")
    pair.check("SELECT dept, count(*) FROM rich GROUP BY dept")


def test_view_with_column_names(pair):
    pair.both("CREATE VIEW v (k, who) AS SELECT id, name FROM emp")
    pair.check("SELECT who FROM v WHERE k < 4")


@pytest.mark.parametrize("sql", [
    "SELECT salary AS id FROM emp ORDER BY id",
    "SELECT dept, count(*) AS n FROM emp GROUP BY dept HAVING n > 1",
    "SELECT id, salary / 100 AS s FROM emp ORDER BY s + id DESC",
])
def test_output_aliases_in_order_by_and_having(pair, sql):
    pair.check(sql)


MIXED = [
 "WITH d AS (SELECT * FROM dept WHERE city = 'nyc') SELECT a.dname, b.dname FROM d a, d b WHERE a.id < b.id",
 "WITH emp AS (SELECT 1 AS id) SELECT * FROM emp",
 "WITH x AS (SELECT 5 AS v) SELECT (SELECT v FROM x) + 1",
 "WITH x AS (SELECT 5 AS v) SELECT * FROM (WITH y AS (SELECT v + 1 AS w FROM x) SELECT w FROM y)",
 "SELECT e.name FROM emp e JOIN dept d ON d.id = e.dept AND d.id IN (SELECT dept FROM emp WHERE salary > 4000)",
 "SELECT dept, (SELECT count(*) FROM emp x WHERE x.dept = emp.dept) FROM emp GROUP BY dept",
 "SELECT e.name, d.dname FROM emp e LEFT JOIN dept d ON e.dept = d.id AND EXISTS (SELECT 1 FROM emp z WHERE z.boss = e.id)",
 "SELECT name FROM emp WHERE id IN (SELECT boss FROM emp) AND dept IN (SELECT id FROM dept)",
 "SELECT * FROM (SELECT dept, sum(salary) s FROM emp GROUP BY dept) t JOIN dept ON dept.id = t.dept ORDER BY s DESC",
 "SELECT count(*) FROM emp WHERE salary > (SELECT avg(salary) FROM emp)",
 "SELECT a.id FROM emp a WHERE a.salary = (SELECT max(b.salary) FROM emp b WHERE b.dept = a.dept)",
 "SELECT max(id), min(name) FROM emp GROUP BY boss HAVING max(salary) IS NOT NULL ORDER BY 1",
 "SELECT id FROM emp UNION ALL SELECT id FROM dept ORDER BY id DESC LIMIT 4",
 "SELECT name FROM emp ORDER BY (SELECT dname FROM dept WHERE dept.id = emp.dept), name",
 "SELECT DISTINCT e.dept FROM emp e JOIN emp f ON e.dept = f.dept AND e.id <> f.id",
 "SELECT count(*), count(DISTINCT e.dept) FROM emp e, dept d WHERE e.dept > d.id",
 "SELECT d.id, e.id FROM dept d LEFT JOIN emp e ON e.dept = d.id AND e.salary > 3500 ORDER BY d.id, e.id",
 "SELECT coalesce(e.dept, d.id) k, count(*) FROM emp e FULL JOIN dept d ON e.dept = d.id GROUP BY k",
 "SELECT * FROM emp WHERE dept = 10 UNION SELECT * FROM emp WHERE salary < 3000",
 "SELECT id, (SELECT name FROM emp b WHERE b.id = a.boss) FROM emp a",
 "SELECT x FROM (SELECT salary AS x FROM emp UNION SELECT id FROM dept) WHERE x > 20",
 "SELECT sum(s) FROM (SELECT salary s FROM emp LIMIT 3)",
 "SELECT name FROM emp ORDER BY salary IS NULL, salary LIMIT 3 OFFSET 1",
 "SELECT dept, count(*) FROM emp WHERE boss IS NOT NULL GROUP BY dept ORDER BY count(*) DESC, dept LIMIT 2",
]


@pytest.mark.parametrize("sql", MIXED)
def test_mixed_features_match_sqlite(pair, sql):
    pair.check(sql)


def test_named_windows(pair):
    pair.check("SELECT id, sum(salary) OVER w, rank() OVER (w ORDER BY id) FROM emp "
               "WINDOW w AS (PARTITION BY dept)")
    pair.check("SELECT id, row_number() OVER w FROM emp WINDOW w AS (ORDER BY salary, id)")


@pytest.mark.parametrize("sql", [
    "SELECT id, sum(salary) OVER (ORDER BY salary RANGE BETWEEN 1000 PRECEDING AND CURRENT ROW) FROM emp",
    "SELECT id, count(*) OVER (ORDER BY salary DESC RANGE BETWEEN 500 PRECEDING AND 500 FOLLOWING) FROM emp",
    "SELECT id, max(id) OVER (PARTITION BY dept ORDER BY salary RANGE BETWEEN CURRENT ROW AND 1000 FOLLOWING) FROM emp",
])
def test_range_frames_with_offsets(pair, sql):
    pair.check(sql)


def test_sum_overflow_in_between_is_an_error_like_sqlite(pair):
    pair.both("CREATE TABLE edge (v INTEGER)")
    pair.many("INSERT INTO edge VALUES (?)", [(2 ** 63 - 1,), (1,), (-1,)])
    with pytest.raises(DataError, match="overflow"):
        pair.ours("SELECT sum(v) FROM edge")
    pair.check("SELECT total(v) FROM edge")
