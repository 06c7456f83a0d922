"""A single transaction at a time against a dict model: read-your-writes, scans, savepoints.

Hypothesis generates op sequences over a tiny key alphabet (so keys collide, share prefixes and
sit next to their ``key + b"\\0"`` successors). The model is a dict of committed state plus a
copy per open transaction and per savepoint; every read and every commit is compared with it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlkv.errors import ConditionFailedError, ProgrammingError
from sqlkv.storage.kv import Engine
from sqlkv.txn import TxnManager

KEYS = st.lists(st.sampled_from([0x00, 0x01, 0x61, 0xFF]), max_size=3).map(bytes)
VALUES = st.binary(max_size=3)
LIMITS = st.none() | st.integers(0, 5)

WRITE_OPS = st.one_of(
    st.tuples(st.just("put"), KEYS, VALUES),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("delete_range"), KEYS, KEYS),
)

OPS = st.one_of(
    WRITE_OPS,
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("put_if_absent"), KEYS, VALUES),
    st.tuples(st.just("scan"), KEYS, st.none() | KEYS, st.booleans(), LIMITS, st.none() | st.integers(0, 4)),
    st.tuples(st.just("scan_write"), KEYS, st.none() | KEYS, st.booleans(), LIMITS, st.integers(0, 3), WRITE_OPS),
    st.tuples(
        st.just("scan_skip"), st.integers(0, 3), KEYS, st.none() | KEYS, st.booleans(), LIMITS,
        st.integers(0, 3), WRITE_OPS,
    ),
    st.just(("savepoint",)),
    st.tuples(st.just("rollback_to"), st.integers(0, 3)),
    st.tuples(st.just("release"), st.integers(0, 3)),
    st.just(("commit",)),
    st.just(("rollback",)),
)


def expected_scan(
    state: dict[bytes, bytes], start: bytes, end: bytes | None, reverse: bool, limit: int | None
) -> list[tuple[bytes, bytes]]:
    keys = sorted((k for k in state if k >= start and (end is None or k < end)), reverse=reverse)
    pairs = [(k, state[k]) for k in keys]
    return pairs if limit is None else pairs[:limit]


def written_keys(op: tuple) -> list[bytes]:
    """Keys a write op puts or deletes by name (what ``skip_written_since`` hides)."""
    return [op[1]] if op[0] in ("put", "delete", "put_if_absent") else []


def apply_write(txn, state: dict[bytes, bytes], op: tuple) -> None:
    kind = op[0]
    if kind == "put":
        txn.put(op[1], op[2])
        state[op[1]] = op[2]
    elif kind == "delete":
        txn.delete(op[1])
        state.pop(op[1], None)
    else:
        txn.delete_range(op[1], op[2])
        for key in [k for k in state if op[1] <= k < op[2]]:
            del state[key]


@dataclass
class ModelSavepoint:
    token: int
    state: dict[bytes, bytes]  # the transaction's view when it was taken
    byte_size: int  # buffered_bytes then
    written: set[bytes]  # keys put or deleted since (skip_written_since hides them)
    outer_written: list[set[bytes]]  # the enclosing savepoints' sets when it was taken


class Runner:
    """Drives one transaction at a time and checks each result against the model."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.manager = TxnManager.for_engine(engine)
        self.committed: dict[bytes, bytes] = {}
        self.txn = None
        self.state: dict[bytes, bytes] = {}
        self.savepoints: list[ModelSavepoint] = []

    def ensure_txn(self) -> None:
        if self.txn is None:
            self.txn = self.manager.begin()
            self.state = dict(self.committed)
            self.savepoints = []

    def run(self, op: tuple) -> None:
        self.ensure_txn()
        getattr(self, "op_" + op[0])(*op[1:])

    def note_written(self, op: tuple) -> None:
        for savepoint in self.savepoints:
            savepoint.written.update(written_keys(op))
        assert self.txn is None or self.txn.buffered_bytes >= 0

    def op_put(self, key: bytes, value: bytes) -> None:
        apply_write(self.txn, self.state, ("put", key, value))
        self.note_written(("put", key, value))

    def op_delete(self, key: bytes) -> None:
        apply_write(self.txn, self.state, ("delete", key))
        self.note_written(("delete", key))

    def op_delete_range(self, start: bytes, end: bytes) -> None:
        apply_write(self.txn, self.state, ("delete_range", start, end))

    def op_get(self, key: bytes) -> None:
        assert self.txn.get(key) == self.state.get(key)

    def op_put_if_absent(self, key: bytes, value: bytes) -> None:
        if key in self.state:
            with pytest.raises(ConditionFailedError) as info:
                self.txn.put_if_absent(key, value)
            assert info.value.key == key and info.value.actual == self.state[key]
        else:
            self.txn.put_if_absent(key, value)
            self.state[key] = value
            self.note_written(("put", key, value))

    def op_scan(self, start, end, reverse, limit, consume) -> None:
        expected = expected_scan(self.state, start, end, reverse, limit)
        pairs = self.txn.scan(start, end, reverse=reverse, limit=limit)
        if consume is None:
            assert list(pairs) == expected
        else:
            assert list(itertools.islice(pairs, consume)) == expected[:consume]

    def op_scan_write(self, start, end, reverse, limit, consume, write, savepoint=None) -> None:
        """Writes made while a scan is open are seen once the scan reaches their keys."""
        hidden: set[bytes] = set() if savepoint is None else savepoint.written
        token = None if savepoint is None else savepoint.token

        def visible() -> dict[bytes, bytes]:
            return {k: v for k, v in self.state.items() if k not in hidden}

        pairs = self.txn.scan(start, end, reverse=reverse, limit=limit, skip_written_since=token)
        first = list(itertools.islice(pairs, consume))
        assert first == expected_scan(visible(), start, end, reverse, limit)[:consume]
        apply_write(self.txn, self.state, write)
        self.note_written(write)
        rest = list(pairs)
        if consume and len(first) < consume:
            assert rest == []  # the scan had already run out
            return
        after = expected_scan(visible(), start, end, reverse, None)
        if first:
            last = first[-1][0]
            after = [(k, v) for k, v in after if (k < last if reverse else k > last)]
        if limit is not None:
            after = after[: limit - len(first)]
        assert rest == after

    def op_scan_skip(self, pick, start, end, reverse, limit, consume, write) -> None:
        """A statement's scan: keys written since its savepoint stay out of it."""
        if not self.savepoints:
            with pytest.raises(ProgrammingError):
                self.txn.scan(start, end, skip_written_since=10_000)
            return
        savepoint = self.savepoints[pick % len(self.savepoints)]
        self.op_scan_write(start, end, reverse, limit, consume, write, savepoint)

    def op_savepoint(self) -> None:
        token = self.txn.savepoint()
        outer = [set(sp.written) for sp in self.savepoints]
        self.savepoints.append(ModelSavepoint(token, dict(self.state), self.txn.buffered_bytes, set(), outer))

    def op_rollback_to(self, pick: int) -> None:
        if not self.savepoints:
            with pytest.raises(ProgrammingError):
                self.txn.rollback_to(10_000)
            return
        index = pick % len(self.savepoints)
        savepoint = self.savepoints[index]
        self.txn.rollback_to(savepoint.token)
        self.state = dict(savepoint.state)
        savepoint.written.clear()  # every write since it is undone...
        for outer, written in zip(self.savepoints, savepoint.outer_written):
            outer.written = set(written)  # ...so outer savepoints forget them too
        del self.savepoints[index + 1 :]
        assert self.txn.buffered_bytes == savepoint.byte_size

    def op_release(self, pick: int) -> None:
        if not self.savepoints:
            with pytest.raises(ProgrammingError):
                self.txn.release(10_000)
            return
        index = pick % len(self.savepoints)
        self.txn.release(self.savepoints[index].token)
        released = self.savepoints[index:]
        del self.savepoints[index:]
        with pytest.raises(ProgrammingError):
            self.txn.rollback_to(released[-1].token)

    def op_commit(self) -> None:
        seq = self.txn.commit()
        assert seq is None or seq == self.engine.last_seq
        self.committed = self.state
        self.txn = None
        assert list(self.engine.scan(b"", None)) == sorted(self.committed.items())

    def op_rollback(self) -> None:
        self.txn.rollback()
        self.txn = None
        assert list(self.engine.scan(b"", None)) == sorted(self.committed.items())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, max_size=40))
def test_transaction_matches_dict_model(ops: list[tuple], mem_engine) -> None:
    # One engine across examples: committed state carries over, the runner re-reads it.
    runner = Runner(mem_engine)
    runner.committed = dict(mem_engine.scan(b"", None))
    for op in ops:
        runner.run(op)
    runner.run(("commit",))
    assert runner.manager.stats()["active"] == 0


def test_model_sequence_on_each_engine(engine: Engine) -> None:
    """A fixed op sequence through the same runner on every engine (LSM included)."""
    runner = Runner(engine)
    script = [
        ("put", b"a", b"1"), ("put", b"b", b"2"), ("put", b"c", b"3"), ("commit",),
        ("savepoint",), ("delete_range", b"a", b"c"), ("put", b"b", b"new"),
        ("scan", b"", None, False, None, None), ("scan", b"", None, True, 2, None),
        ("savepoint",), ("delete", b"c"), ("get", b"c"), ("rollback_to", 1), ("get", b"c"),
        ("rollback_to", 0), ("get", b"a"), ("put_if_absent", b"a", b"x"),
        ("put_if_absent", b"d", b"4"), ("release", 0), ("commit",),
        ("delete_range", b"", b"\xff"), ("put", b"z", b"26"), ("rollback",),
        ("scan_write", b"a", None, False, None, 1, ("delete", b"c")), ("commit",),
    ]
    for op in script:
        runner.run(op)
