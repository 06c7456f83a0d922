"""Model-based test: random operations on an engine and on a dict must agree.

The same state machine runs over MemoryEngine and LSMEngine (the latter with tiny memtables and
tables so flushes, compactions and range-tombstone file drops really happen, plus reopen).
"""

from __future__ import annotations

import shutil
import tempfile

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sqlkv.errors import ConditionFailedError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.memory import MemoryEngine
from tests.storage.conftest import SMALL, apply_ops, model_scan, to_batch

KEYS = [bytes([a]) + bytes([b]) for a in b"abcd" for b in b"\x00ab\xff"] + [b"", b"a", b"b", b"\xff\xff"]
key_st = st.sampled_from(KEYS) | st.binary(min_size=1, max_size=3)
value_st = st.binary(min_size=0, max_size=120)
op_st = st.one_of(
    st.tuples(st.just("put"), key_st, value_st),
    st.tuples(st.just("delete"), key_st),
    st.tuples(st.just("range"), key_st, key_st),
)


class KVMachine(RuleBasedStateMachine):
    durable = False

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[bytes, bytes] = {}
        self.snapshots: list[tuple[object, dict]] = []
        self.engine = self.open()

    def open(self):
        return MemoryEngine()

    @rule(ops=st.lists(op_st, min_size=1, max_size=30))
    def write(self, ops):
        self.engine.write(to_batch(ops))
        apply_ops(self.model, ops)

    @rule(key=key_st, value=value_st, right=st.booleans())
    def conditional_put(self, key, value, right):
        expected = self.model.get(key) if right else b"not-" + (self.model.get(key) or b"")
        batch = WriteBatch()
        batch.put_if_equals(key, value, expected)
        batch.delete(b"\x00side-effect")
        try:
            self.engine.write(batch)
        except ConditionFailedError as exc:
            assert not right
            assert exc.actual == self.model.get(key)
        else:
            assert right
            self.model[key] = value
            self.model.pop(b"\x00side-effect", None)

    @rule(n=st.integers(1, 400), prefix=st.sampled_from([b"a", b"b", b"c"]))
    def bulk(self, n, prefix):
        ops = [("put", prefix + b"%04d" % i, b"v%d" % i * 5) for i in range(n)]
        self.write(ops)

    @rule(key=key_st)
    def get(self, key):
        assert self.engine.get(key) == self.model.get(key)

    @rule(keys=st.lists(key_st | st.sampled_from([b"a%04d" % i for i in (0, 1, 7, 399)]), max_size=25))
    def get_many(self, keys):
        snap = self.engine.snapshot()
        try:  # several keys against one read state (multiget.py on the LSM), repeats and all
            assert snap.get_many(keys) == [self.model.get(key) for key in keys]
        finally:
            snap.close()

    @rule(start=key_st, end=st.none() | key_st, reverse=st.booleans(), limit=st.none() | st.integers(0, 50))
    def scan(self, start, end, reverse, limit):
        got = list(self.engine.scan(start, end, reverse=reverse, limit=limit))
        assert got == model_scan(self.model, start, end, reverse, limit)
        snap = self.engine.snapshot()
        try:  # the same pairs read at once (LSMCore.read_range_at)
            assert snap.read_range(start, end, reverse, limit) == got
        finally:
            snap.close()

    @rule(prefix=st.sampled_from([b"a", b"b", b"c"]),
          picks=st.lists(st.tuples(st.integers(0, 399), st.sampled_from(["put", "delete", "range"])),
                         min_size=1, max_size=8))
    def scatter(self, prefix, picks):
        """A few updates, deletes and short range deletes spread over a `bulk` prefix: after a
        flush the big source and these few small ones are what a merged scan walks."""
        ops = []
        for i, kind in picks:
            key = prefix + b"%04d" % i
            if kind == "put":
                ops.append(("put", key, b"u%d" % i))
            elif kind == "delete":
                ops.append(("delete", key))
            else:
                ops.append(("range", key, prefix + b"%04d" % (i + 3)))
        self.write(ops)

    @rule(start=key_st, end=st.none() | key_st, reverse=st.booleans(),
          sizes=st.lists(st.integers(1, 70), min_size=1, max_size=6), old=st.booleans())
    def read_in_batches(self, start, end, reverse, sizes, old):
        """Successive reads of one `range_reader` (the LSM keeps its merged cursors between
        them) give the model's pairs in order, a short read only at the end -- also on an
        older snapshot, while writes land between the reads."""
        if old and self.snapshots:
            snap, model, owned = self.snapshots[0][0], self.snapshots[0][1], False
        else:
            snap, model, owned = self.engine.snapshot(), dict(self.model), True
        try:
            reader = snap.range_reader(start, end, reverse)
            got: list = []
            for i, size in enumerate(sizes * 40):
                batch = reader.read(size)
                got += batch
                if len(batch) < size:
                    break
                if i == 1:  # a write the open reader must not see
                    self.write([("put", start + b"\x00", b"late"), ("delete", start)])
            else:
                got += reader.read()
            reader.close()
            assert reader.read(5) == []
            assert got == model_scan(model, start, end, reverse, None)
        finally:
            if owned:
                snap.close()

    @precondition(lambda self: len(self.snapshots) < 3)
    @rule()
    def take_snapshot(self):
        snap = self.engine.snapshot()
        assert snap.seq == self.engine.last_seq
        self.snapshots.append((snap, dict(self.model)))

    @precondition(lambda self: self.snapshots)
    @rule(i=st.integers(0, 2), key=key_st, start=key_st, reverse=st.booleans())
    def read_snapshot(self, i, key, start, reverse):
        snap, model = self.snapshots[i % len(self.snapshots)]
        assert snap.get(key) == model.get(key)
        assert snap.get_many([start, key, start]) == [model.get(start), model.get(key), model.get(start)]
        assert snap.read_range(start, None, reverse) == model_scan(model, start, None, reverse, None)
        assert list(snap.scan(start, None, reverse=reverse)) == model_scan(model, start, None, reverse, None)

    @precondition(lambda self: self.snapshots)
    @rule(i=st.integers(0, 2))
    def close_snapshot(self, i):
        snap, _ = self.snapshots.pop(i % len(self.snapshots))
        snap.close()

    @rule()
    def flush(self):
        self.engine.flush()

    @rule()
    def compact(self):
        self.engine.compact()

    @invariant()
    def full_scan_agrees(self):
        assert list(self.engine.scan(b"", None)) == model_scan(self.model, b"", None, False, None)

    def teardown(self):
        for snap, _ in self.snapshots:
            snap.close()
        self.engine.close()


class LSMMachine(KVMachine):
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="sqlkv-model-")
        super().__init__()

    def open(self):
        return open_lsm(self.dir, durability="off", **SMALL)

    @rule()
    def reopen(self):
        for snap, _ in self.snapshots:
            snap.close()
        self.snapshots = []
        self.engine.close()
        self.engine = self.open()

    def teardown(self):
        super().teardown()
        shutil.rmtree(self.dir, ignore_errors=True)


_settings = settings(max_examples=25, stateful_step_count=30, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TestMemoryEngineModel = KVMachine.TestCase
TestMemoryEngineModel.settings = _settings
TestLSMEngineModel = LSMMachine.TestCase
TestLSMEngineModel.settings = _settings
