"""The transaction-layer anomaly suite (lost update, write skew, phantoms, unique races...) and
the threaded bank/capacity tests, re-run unchanged on an etcd engine: there the commit-time
validation happens inside etcd (compares), not in the in-process conflict log."""

from __future__ import annotations

import pytest

from sqlkv.storage.etcd import open_etcd
from sqlkv.txn import TxnManager
from tests.txn.test_txn_anomalies import *  # noqa: F401,F403 - the same tests, etcd fixtures below
from tests.txn.test_txn_serializable import (  # noqa: F401
    test_bank_transfers_from_threads,
    test_capacity_check_under_concurrent_inserts,
)


@pytest.fixture
def engine(etcd_url):
    eng = open_etcd(etcd_url)
    yield eng
    eng.close()


@pytest.fixture
def manager(engine) -> TxnManager:
    return TxnManager.for_engine(engine)


def test_suite_really_runs_on_etcd(manager):
    assert manager._engine().shared and manager._engine().stats()["engine"] == "etcd"
