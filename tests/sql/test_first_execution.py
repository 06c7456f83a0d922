"""The first execution of a new SELECT text: planned inside the fast read's transaction when its
plan is a fast read (sql/fastread.py), else by the normal path -- once either way -- with
the same answers (sqlite3's), errors, statement figures and transaction state as before."""

from __future__ import annotations

import pytest

import sqlkv.sql.plancache as plancache_module
from sqlkv.errors import ProgrammingError
from sqlkv.sql import Session
from tests.sql.test_sql_fastread import pair  # noqa: F401 - the fixture: table o, and sqlite3's copy

@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """How often statements are planned and how often the normal path runs."""
    counts = {"plans": 0, "normal": 0}
    plan, execute = plancache_module.plan_statement, Session._execute

    def planning(*args):
        counts["plans"] += 1
        return plan(*args)

    def normal(self, *args):
        counts["normal"] += 1
        return execute(self, *args)

    monkeypatch.setattr(plancache_module, "plan_statement", planning)
    monkeypatch.setattr(Session, "_execute", normal)
    return counts


@pytest.mark.parametrize("sql, params", [
    ("SELECT id, sku, amount FROM o ORDER BY sku LIMIT 10", ()),
    ("SELECT id, sku, amount FROM o ORDER BY sku DESC LIMIT 10", ()),
    ("SELECT * FROM o WHERE id = ?", (17,)),
    ("SELECT id, cust FROM o WHERE sku = ?", ("s0037",)),
    ("SELECT amount FROM o WHERE cust = ?", (4,)),
])
def test_a_new_fast_read_is_ready_at_its_first_execution(pair, counted, sql, params) -> None:
    s, lite = pair
    first = s.execute(sql, params)
    assert first.ready is not None and counted == {"plans": 1, "normal": 0}
    assert list(first) == lite.execute(sql, params).fetchall()
    assert s.execute(sql, params).fetchall() == lite.execute(sql, params).fetchall()
    assert counted == {"plans": 1, "normal": 0} and not s.in_transaction


def test_a_new_select_of_the_normal_path_is_planned_once(pair, counted) -> None:
    s, lite = pair
    sql = "SELECT cust, count(*), sum(amount) FROM o GROUP BY cust ORDER BY cust"
    assert s.execute(sql).fetchall() == lite.execute(sql).fetchall()
    assert counted == {"plans": 1, "normal": 1} and not s.in_transaction


@pytest.mark.parametrize("autocommit", [True, False])
def test_a_new_select_that_fails_to_plan(pair, autocommit) -> None:
    s, _ = pair
    s.autocommit = autocommit
    sql = "SELECT id FROM missing WHERE id = ?"
    for _ in range(2):
        with pytest.raises(ProgrammingError, match="missing"):
            s.execute(sql, (1,))
    if not autocommit:
        s.rollback()
    s.autocommit = True
    count, errors = s.execute("SELECT count, errors FROM sqlkv_internal.statement_stats WHERE statement = ?",
                              (sql,)).fetchall()[0]
    assert (count, errors) == (2, 2) and not s.in_transaction
    assert s.execute("SELECT amount FROM o WHERE id = ?", (3,)).fetchall()


def test_a_new_select_in_a_transaction_reads_its_writes(pair) -> None:
    s, lite = pair
    before = lite.execute("SELECT amount FROM o WHERE id = 5").fetchall()
    s.autocommit = False
    s.execute("UPDATE o SET amount = -1 WHERE id = 5")
    assert s.execute("SELECT amount, sku FROM o WHERE id = ?", (5,)).fetchall() == [(-1, "s0005")]
    s.rollback()
    assert s.execute("SELECT amount FROM o WHERE id = ? AND cust >= 0", (5,)).fetchall() == before != [(-1,)]
