"""The query suites (SELECT, joins, operators, expression semantics; each checked against
sqlite3) re-run unchanged on etcd, ``:memory:`` rerouted to a fresh etcd database per test.
Bounded: about 230 small tests, seconds in all (the repeated-leader-kill soak is in
test_etcd_faults.py, marked slow)."""

from __future__ import annotations

import pytest

from tests.query.conftest import pair  # noqa: F401 - the fixture those suites use
from tests.query.test_query_joins import *  # noqa: F401,F403
from tests.query.test_query_operators import *  # noqa: F401,F403
from tests.query.test_query_select import *  # noqa: F401,F403
from tests.sql.test_expr_semantics import *  # noqa: F401,F403

pytestmark = pytest.mark.usefixtures("as_etcd")


def test_suites_really_run_on_etcd(pair):
    assert pair.db.engine.stats()["engine"] == "etcd"
