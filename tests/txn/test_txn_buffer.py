"""The write buffer on its own: the dict of entries, its lazily synced key index, and the batch.

The buffer keeps entries in a dict and their key order in a SortedList brought up to date only
when something needs order. Hypothesis interleaves writes, undo (savepoint rollbacks), ordered
reads and batch building over a tiny key alphabet and compares each with a dict model, so the
index is exercised in every state: never built, partly stale, just synced, shrunk by undo.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.storage.kv import OP_DELETE, OP_DELETE_RANGE, OP_PUT
from sqlkv.storage.memory import MemoryEngine
from sqlkv.txn import TxnManager
from sqlkv.txn.buffer import WriteBuffer

KEYS = st.lists(st.sampled_from([0x00, 0x01, 0x61, 0xFF]), max_size=3).map(bytes)

OPS = st.one_of(
    st.tuples(st.just("put"), KEYS, st.binary(max_size=3)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("delete_range"), KEYS, KEYS),
    st.tuples(st.just("count"), KEYS, st.none() | KEYS),
    st.tuples(st.just("ordered"), KEYS, st.none() | KEYS, st.booleans()),
    st.just(("batch",)),
    st.just(("savepoint",)),
    st.tuples(st.just("rollback_to"), st.integers(0, 3)),
    st.tuples(st.just("release"), st.integers(0, 3)),
)


def in_range(key: bytes, start: bytes, end: bytes | None) -> bool:
    return key >= start and (end is None or key < end)


def apply_batch(base: dict[bytes, bytes], ops: list[tuple]) -> dict[bytes, bytes]:
    """What an engine holding ``base`` holds after the batch (ops apply in order)."""
    state = dict(base)
    for op, a, b in ops:
        if op == OP_PUT:
            state[a] = b
        elif op == OP_DELETE:
            state.pop(a, None)
        else:
            for key in [k for k in state if a <= k < b]:
                del state[key]
    return state


class BufferModel:
    """The buffer's entries and ranges as plain dicts/lists, plus the view over a snapshot."""

    def __init__(self, base: dict[bytes, bytes]) -> None:
        self.base = base
        self.buffer = WriteBuffer()
        self.entries: dict[bytes, bytes | None] = {}
        self.view = dict(base)  # what the transaction sees
        self.savepoints: list[tuple[int, dict, dict]] = []

    def check_index(self) -> None:
        buffer = self.buffer
        assert buffer.entries == self.entries
        indexed, pending = list(buffer._index), buffer._unindexed
        assert sorted(indexed + pending) == sorted(self.entries)  # disjoint, each key once

    def run(self, op: tuple) -> None:
        getattr(self, "op_" + op[0])(*op[1:])
        self.check_index()

    def op_put(self, key: bytes, value: bytes) -> None:
        self.buffer.put(key, value)
        self.entries[key] = value
        self.view[key] = value

    def op_delete(self, key: bytes) -> None:
        self.buffer.put(key, None)
        self.entries[key] = None
        self.view.pop(key, None)

    def op_delete_range(self, start: bytes, end: bytes) -> None:
        self.buffer.delete_range(start, end)
        for state in (self.entries, self.view):
            for key in [k for k in state if start <= k < end]:
                del state[key]

    def op_count(self, start: bytes, end: bytes | None) -> None:
        expected = sum(1 for k in self.entries if in_range(k, start, end))
        assert self.buffer.count_entries(start, end) == expected

    def op_ordered(self, start: bytes, end: bytes | None, reverse: bool) -> None:
        assert self.buffer.sorted_keys() == sorted(self.entries)
        if end is not None and end <= start:
            return
        keys = list(self.buffer.sorted_index().irange(start, end, (True, False), reverse=reverse))
        assert keys == sorted((k for k in self.entries if in_range(k, start, end)), reverse=reverse)

    def op_batch(self) -> None:
        ops = self.buffer.to_batch().ops
        ranges = [op for op in ops if op[0] == OP_DELETE_RANGE]
        points = [op for op in ops if op[0] != OP_DELETE_RANGE]
        assert ops[: len(ranges)] == ranges  # ranges first: entries are newer than them
        point_keys = [op[1] for op in points]
        assert point_keys == sorted(set(point_keys))  # key order, each key once
        assert apply_batch(self.base, ops) == self.view

    def op_savepoint(self) -> None:
        token = self.buffer.savepoint()
        self.savepoints.append((token, dict(self.entries), dict(self.view)))

    def op_rollback_to(self, pick: int) -> None:
        if not self.savepoints:
            return
        index = pick % len(self.savepoints)
        token, entries, view = self.savepoints[index]
        self.buffer.rollback_to(token)
        self.entries, self.view = dict(entries), dict(view)
        del self.savepoints[index + 1 :]

    def op_release(self, pick: int) -> None:
        if not self.savepoints:
            return
        index = pick % len(self.savepoints)
        self.buffer.release(self.savepoints[index][0])
        del self.savepoints[index:]


@settings(max_examples=400, deadline=None)
@given(
    base=st.dictionaries(KEYS, st.binary(max_size=2), max_size=5),
    ops=st.lists(OPS, max_size=40),
)
def test_buffer_matches_model(base: dict[bytes, bytes], ops: list[tuple]) -> None:
    model = BufferModel(base)
    for op in ops:
        model.run(op)
    model.op_batch()


def test_put_only_transaction_never_builds_the_index() -> None:
    """Many puts and no ordered read: the commit sorts once, the index stays empty."""
    engine = MemoryEngine()
    manager = TxnManager.for_engine(engine)
    txn = manager.begin()
    keys = [b"k%05d" % ((i * 7919) % 3000) for i in range(3000)]  # a permutation, out of order
    for key in keys:
        txn.put(key, key[::-1])
    txn.get(b"k00001")  # point reads do not need order either
    txn.put_if_absent(b"new", b"v")
    buffer = txn._buffer
    assert len(buffer._index) == 0 and len(buffer._unindexed) == 3001
    ops = txn._batch().ops
    assert [op[1] for op in ops] == sorted(keys + [b"new"])
    txn.commit()
    assert list(engine.scan(b"", None)) == sorted([(k, k[::-1]) for k in keys] + [(b"new", b"v")])
    engine.close()


def test_scan_after_bulk_puts_sees_them_in_order_and_later_puts_too() -> None:
    engine = MemoryEngine()
    manager = TxnManager.for_engine(engine)
    setup = manager.begin()
    for i in range(0, 100, 3):
        setup.put(b"k%03d" % i, b"old")
    setup.commit()
    txn = manager.begin()
    for i in range(99, -1, -2):  # descending puts: the index is built from an unsorted set
        txn.put(b"k%03d" % i, b"new")
    expected = {b"k%03d" % i: b"old" for i in range(0, 100, 3)}
    expected.update({b"k%03d" % i: b"new" for i in range(1, 100, 2)})
    pairs = txn.scan(b"k", b"l")
    first = [next(pairs) for _ in range(10)]
    txn.put(b"k0505", b"mid")  # lands ahead of the scan (between k050 and k051): seen
    txn.put(b"k000", b"behind")  # behind the scan: not seen by it
    rest = list(pairs)
    expected[b"k0505"] = b"mid"
    assert first + rest == sorted(expected.items())
    expected[b"k000"] = b"behind"
    assert list(txn.scan(b"k", b"l", reverse=True, limit=7)) == sorted(expected.items())[::-1][:7]
    txn.commit()
    assert list(engine.scan(b"k", b"l")) == sorted(expected.items())
    engine.close()
