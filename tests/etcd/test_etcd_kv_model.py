"""The storage model test (random batches, snapshots, conditional puts vs a dict) on etcd."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import rule

from sqlkv.errors import SerializationFailure
from sqlkv.storage.etcd import open_etcd
from tests.etcd.conftest import TEST_MAX_TXN_OPS, fresh_name
from tests.storage.conftest import model_scan
from tests.storage.test_storage_model import KVMachine

_cluster = None


@pytest.fixture(autouse=True)
def _cluster_for_machine(etcd_cluster):
    global _cluster
    _cluster = etcd_cluster
    yield


class EtcdMachine(KVMachine):
    def open(self):
        return open_etcd(_cluster.url(fresh_name("kv"), max_txn_ops=TEST_MAX_TXN_OPS, page_size=7))

    @rule()
    def compact(self):
        """etcd compaction: older snapshots become unreadable (retryable), the data stays."""
        self.engine.compact()
        for snap, _ in self.snapshots:
            if snap.seq < self.engine.last_seq:
                with pytest.raises(SerializationFailure, match="compacted"):
                    snap.get(b"a")
        self.snapshots = []
        assert list(self.engine.scan(b"", None)) == model_scan(self.model, b"", None, False, None)


TestEtcdEngineModel = EtcdMachine.TestCase
TestEtcdEngineModel.settings = settings(
    max_examples=12, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
