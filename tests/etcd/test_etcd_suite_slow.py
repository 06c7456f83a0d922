"""Soak on etcd (``slow``: SQLKV_SLOW=1): the query suites re-run on etcd, and repeated leader
kills under a multi-process bank workload."""

from __future__ import annotations

import pytest

from tests.query.conftest import pair  # noqa: F401 - the fixture those suites use
from tests.query.test_query_joins import *  # noqa: F401,F403
from tests.query.test_query_operators import *  # noqa: F401,F403
from tests.query.test_query_select import *  # noqa: F401,F403
from tests.sql.test_expr_semantics import *  # noqa: F401,F403

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("as_etcd")]


def test_suites_really_run_on_etcd(pair):
    assert pair.db.engine.stats()["engine"] == "etcd"
