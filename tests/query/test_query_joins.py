"""Joins vs sqlite3 (every kind, ON/USING/NATURAL, comma joins) and the planner's method choice."""

from __future__ import annotations

import pytest

from sqlkv.errors import ProgrammingError

JOINS = [
    "SELECT e.name, d.dname FROM emp e JOIN dept d ON e.dept = d.id",
    "SELECT e.name, d.dname FROM emp e INNER JOIN dept d ON d.id = e.dept AND d.city = 'nyc'",
    "SELECT e.name, d.dname FROM emp e, dept d WHERE e.dept = d.id AND e.salary > 2000",
    "SELECT e.name, d.dname FROM emp e LEFT JOIN dept d ON e.dept = d.id",
    "SELECT e.name, d.dname FROM emp e LEFT JOIN dept d ON e.dept = d.id AND d.city = 'nyc'",
    "SELECT e.name, d.dname FROM emp e LEFT JOIN dept d ON e.dept = d.id WHERE d.id IS NULL",
    "SELECT e.name, d.dname FROM emp e LEFT JOIN dept d ON e.dept = d.id WHERE e.salary > 2000",
    "SELECT e.name, d.dname FROM dept d LEFT JOIN emp e ON e.dept = d.id",
    "SELECT e.name, d.dname FROM emp e RIGHT JOIN dept d ON e.dept = d.id",
    "SELECT e.name, d.dname FROM emp e FULL OUTER JOIN dept d ON e.dept = d.id",
    "SELECT e.name, d.dname FROM emp e FULL JOIN dept d ON e.dept = d.id WHERE d.city = 'nyc' OR e.id > 6",
    "SELECT e.name, d.dname FROM emp e CROSS JOIN dept d",
    "SELECT count(*) FROM emp a, emp b",
    "SELECT a.name, b.name FROM emp a JOIN emp b ON a.boss = b.id",
    "SELECT a.name, b.name, c.name FROM emp a JOIN emp b ON a.boss = b.id JOIN emp c ON b.boss = c.id",
    "SELECT a.name, b.name FROM emp a JOIN emp b ON a.salary < b.salary AND a.dept = b.dept",
    "SELECT a.name, b.name FROM emp a JOIN emp b ON a.salary < b.salary",
    "SELECT a.name, b.name FROM emp a LEFT JOIN emp b ON a.salary < b.salary AND b.dept = 10",
    "SELECT e.name, d.dname FROM emp e JOIN dept d ON e.dept = d.id JOIN emp b ON b.id = e.boss WHERE b.salary > 3000",
    "SELECT e.name, d.dname, b.name FROM emp e LEFT JOIN dept d ON e.dept = d.id LEFT JOIN emp b ON b.id = e.boss",
    "SELECT d.dname, count(e.id), sum(e.salary) FROM dept d LEFT JOIN emp e ON e.dept = d.id GROUP BY d.dname",
    "SELECT * FROM emp e JOIN dept d ON e.dept = d.id ORDER BY e.id",
    "SELECT * FROM emp JOIN dept USING (id)",
    "SELECT id, name, dname FROM emp JOIN dept USING (id)",
    "SELECT * FROM emp NATURAL JOIN dept",
    "SELECT * FROM emp LEFT JOIN dept USING (id)",
    "SELECT e.name FROM emp e JOIN (SELECT dept, max(salary) AS m FROM emp GROUP BY dept) t "
    "ON e.dept = t.dept AND e.salary = t.m",
    "SELECT x.n, y.n FROM (SELECT 1 AS n UNION ALL SELECT 2) x JOIN (SELECT 2 AS n UNION ALL SELECT 3) y ON x.n <= y.n",
    "SELECT e.name, d.dname FROM dept d, emp e WHERE d.id = e.dept AND d.city = 'sf'",
    "SELECT a.id, b.id FROM emp a, emp b WHERE a.id = b.boss AND b.id = 4",
]


@pytest.mark.parametrize("sql", JOINS)
def test_join_matches_sqlite(pair, sql):
    pair.check(sql)


def test_star_columns_of_joins(pair):
    assert pair.columns("SELECT * FROM emp JOIN dept USING (id)") == \
        ["id", "name", "dept", "salary", "boss", "dname", "city"]
    assert pair.columns("SELECT dept.*, emp.name FROM emp JOIN dept USING (id)") == \
        ["id", "dname", "city", "name"]


def test_join_errors(pair):
    with pytest.raises(ProgrammingError, match="more than once"):
        pair.ours("SELECT * FROM emp JOIN emp ON 1 = 1")
    with pytest.raises(ProgrammingError, match="USING"):
        pair.ours("SELECT * FROM emp JOIN dept USING (nope)")


def explain(pair, sql):
    return [r[0] for r in pair.ours("EXPLAIN " + sql)]


def test_lookup_join_through_an_index_of_the_inner_table(pair):
    pair.both("CREATE INDEX emp_dept ON emp (dept)")
    plan = explain(pair, "SELECT e.name FROM dept d JOIN emp e ON e.dept = d.id WHERE d.id = 10")
    assert any("lookup join" in line and "emp@emp_dept" in line for line in plan), plan
    pair.check("SELECT e.name FROM dept d JOIN emp e ON e.dept = d.id WHERE d.id = 10")


def test_lookup_join_on_primary_key(pair):
    plan = explain(pair, "SELECT e.name, d.dname FROM emp e JOIN dept d ON d.id = e.dept WHERE e.id = 3")
    assert any("lookup join" in line and "dept@" in line for line in plan), plan


def test_hash_join_without_a_fitting_index(pair):
    plan = explain(pair, "SELECT e.name, d.dname FROM emp e JOIN dept d ON d.dname = e.name")
    assert any(line.strip().startswith("hash join (inner)") for line in plan), plan
    pair.check("SELECT e.name, d.dname FROM emp e JOIN dept d ON d.dname = e.name")


def test_nested_loop_only_without_equality(pair):
    plan = explain(pair, "SELECT a.id, b.id FROM emp a JOIN emp b ON a.salary < b.salary")
    assert any("nested loop join" in line for line in plan), plan
    plan = explain(pair, "SELECT a.id FROM emp a JOIN emp b ON a.name = b.name")
    assert not any("nested loop" in line for line in plan), plan


def test_selective_filtered_table_drives_the_join(pair):
    # dept filtered to one row by its primary key drives; emp is reached through its index
    pair.both("CREATE INDEX emp_dept ON emp (dept)")
    plan = explain(pair, "SELECT e.name FROM emp e, dept d WHERE e.dept = d.id AND d.id = 20")
    text = "\n".join(plan)
    join_line = next(i for i, line in enumerate(plan) if "join" in line)
    assert "lookup join" in plan[join_line] and "emp@emp_dept" in plan[join_line], text
    assert "dept@" in plan[join_line + 1], text


def test_explain_shows_group_by_and_sort(pair):
    plan = explain(pair, "SELECT dept, count(*) FROM emp GROUP BY dept ORDER BY 2 DESC LIMIT 2")
    text = "\n".join(plan)
    assert "group by dept" in text and "sort" in text and "limit 2" in text, text


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM (emp a CROSS JOIN dept b)",
    "SELECT a.name, d.dname FROM (emp a LEFT JOIN dept d ON a.dept = d.id) JOIN emp b ON b.id = a.boss",
    "SELECT x.name, z.dname FROM emp x, (emp y JOIN dept z ON y.dept = z.id) WHERE x.id = y.boss",
])
def test_parenthesized_joins(pair, sql):
    pair.check(sql)


def test_index_only_scan_when_the_index_covers_the_query(pair):
    pair.both("CREATE INDEX emp_salary ON emp (salary)")
    sql = "SELECT salary FROM emp WHERE salary > 2000 ORDER BY salary"
    plan = explain(pair, sql)
    assert any("index-only" in line for line in plan), plan
    assert not any(line.strip().startswith("sort") for line in plan), plan
    pair.check(sql)
    plan = explain(pair, "SELECT name FROM emp WHERE salary > 2000")
    assert not any("index-only" in line for line in plan), plan


@pytest.mark.parametrize("sql", [
    "SELECT e.name, d.dname, b.name FROM emp e LEFT JOIN (dept d JOIN emp b ON b.dept = d.id AND b.salary > 3500) "
    "ON d.id = e.dept",
    "SELECT d.dname, e.name FROM dept d LEFT JOIN (emp e LEFT JOIN emp b ON b.id = e.boss) ON e.dept = d.id "
    "WHERE b.name IS NULL",
    "SELECT e.*, d.city FROM emp e JOIN (dept d LEFT JOIN emp x ON x.dept = d.id) ON d.id = e.dept",
])
def test_outer_joins_around_parenthesized_joins(pair, sql):
    pair.check(sql)


def test_explain_lists_subquery_plans(pair):
    plan = explain(pair, "SELECT name, (SELECT count(*) FROM emp s WHERE s.boss = e.id) FROM emp e "
                         "WHERE dept IN (SELECT id FROM dept)")
    text = "\n".join(plan)
    assert "subquery 1 (uncorrelated):" in text and "subquery 2 (correlated):" in text, text


CORRELATED = [
    "SELECT name, (SELECT count(*) FROM emp s WHERE s.boss = e.id) FROM emp e",
    "SELECT name FROM emp e WHERE EXISTS (SELECT 1 FROM emp s WHERE s.boss = e.id AND s.salary > 2000)",
    "SELECT dname FROM dept d WHERE NOT EXISTS (SELECT 1 FROM emp e WHERE e.dept = d.id)",
    "SELECT name, (SELECT dname FROM dept d WHERE d.id = e.dept) FROM emp e",
    "SELECT name FROM emp e WHERE salary > (SELECT min(salary) FROM emp s WHERE s.dept = e.dept AND s.id <> e.id)",
]


@pytest.mark.parametrize("sql", CORRELATED)
def test_correlated_subqueries_with_index_lookups(pair, sql):
    pair.both("CREATE INDEX emp_boss ON emp (boss)")
    pair.both("CREATE INDEX emp_dept ON emp (dept)")
    pair.check(sql)


def test_correlated_equality_becomes_an_index_lookup(pair):
    pair.both("CREATE INDEX emp_boss ON emp (boss)")
    plan = explain(pair, "SELECT name, (SELECT count(*) FROM emp s WHERE s.boss = e.id) FROM emp e")
    assert any("lookup emp@emp_boss" in line for line in plan), plan
