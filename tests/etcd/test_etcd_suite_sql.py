"""SQL suites (DML, DDL, access paths, CHECK) re-run unchanged with ``:memory:`` rerouted to a fresh
etcd database per test (see ``as_etcd``): the SQL layers see only the KV interface."""

from __future__ import annotations

import pytest

from sqlkv.sql import Database
from tests.sql.test_sql_ddl import *  # noqa: F401,F403
from tests.sql.test_sql_dml import *  # noqa: F401,F403

pytestmark = pytest.mark.usefixtures("as_etcd")


def test_suite_really_runs_on_etcd():
    db = Database.open(":memory:")
    try:
        assert db.engine.stats()["engine"] == "etcd"
    finally:
        db.close()
