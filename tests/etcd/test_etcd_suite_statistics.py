"""ANALYZE, statistics and the join choice re-run unchanged with ``:memory:`` rerouted to a fresh
etcd database per test (see ``as_etcd``): ANALYZE's own read-only transaction, system table 6
and both join methods on the etcd engine."""

from __future__ import annotations

import pytest

from tests.sql.test_sql_statistics import *  # noqa: F401,F403

pytestmark = pytest.mark.usefixtures("as_etcd")

del test_analyze_is_refused_in_the_past  # noqa: F821 - etcd keeps no timeline: no AS OF SYSTEM TIME at all
