"""The commit protocol's parts: one op per key, compare coalescing, and telling a failed
condition (ConditionFailedError) from a read conflict (SerializationFailure) from a compare
that failed while the condition still holds (rebuilt and resent)."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from sqlkv.errors import ConditionFailedError, SerializationFailure
from sqlkv.storage.etcd import open_etcd
from sqlkv.storage.etcd.commit import TOMBSTONE, coalesce, merge_ops
from sqlkv.storage.kv import WriteBatch

key_st = st.binary(min_size=1, max_size=2)


def _covers(spans, key):
    return any(s <= key and (e is None or key < e) for s, e in spans)


@given(points=st.lists(key_st, max_size=40), ranges=st.lists(st.tuples(key_st, key_st), max_size=10),
       budget=st.integers(1, 12))
def test_coalesced_spans_cover_every_read_within_budget(points, ranges, budget):
    ranges = [(a, b) for a, b in ranges if a < b]
    spans = coalesce(points, ranges, budget)
    assert len(spans) <= budget
    assert spans == sorted(spans) and all(e is None or s < e for s, e in spans)
    for key in points:
        assert _covers(spans, key)
    for a, b in ranges:  # each scanned range lies inside one compared span
        assert any(s <= a and (e is None or b <= e) for s, e in spans)


@given(ops=st.lists(st.one_of(
    st.tuples(st.just("put"), key_st, st.binary(max_size=2)),
    st.tuples(st.just("del"), key_st),
    st.tuples(st.just("range"), key_st, key_st),
), max_size=25))
def test_merged_ops_touch_each_key_once_and_mean_the_same(ops):
    batch = WriteBatch()
    model: dict[bytes, bytes | None] = {}  # key -> value, None: deleted by this batch
    for op in ops:
        if op[0] == "put":
            batch.put(op[1], op[2])
            model[op[1]] = op[2]
        elif op[0] == "del":
            batch.delete(op[1])
            model[op[1]] = None
        else:
            batch.delete_range(op[1], op[2])
            for k in [k for k in model if op[1] <= k < op[2]]:
                model[k] = None
    puts, ranges = merge_ops(batch)
    for i, (a, b) in enumerate(ranges):  # disjoint, sorted, none holds a put key
        assert a < b and (i == 0 or ranges[i - 1][1] <= a)
        assert not any(a <= k < b for k in puts)
    probe = set(model) | {op[1] for op in ops if op[0] == "range"} | {b"\x00", b"zz"}
    for key in probe:
        in_range = _covers(ranges, key)
        if key in puts:
            want = model.get(key, "untouched")
            assert puts[key] == (TOMBSTONE if want is None else b"v" + want)
        elif in_range:
            assert model.get(key) is None  # deleted by a range (or never written and inside one)
        else:
            deleted_by_range = any(op[0] == "range" and op[1] <= key < op[2] for op in ops)
            assert key not in model or (model[key] is None and deleted_by_range)


class _Before:
    """Run ``action()`` once, just before this engine sends its next commit txn."""

    def __init__(self, engine, action):
        self.real = engine.client.call
        self.action = action

    def __call__(self, path, body, idempotent=True):
        if path == "kv/txn" and self.action is not None:
            action, self.action = self.action, None
            action()
        return self.real(path, body, idempotent)


def _put(engine, key, value):
    batch = WriteBatch()
    if value is None:
        batch.delete(key)
    else:
        batch.put(key, value)
    return engine.write(batch)


@pytest.fixture
def two(etcd_url):
    a, b = open_etcd(etcd_url), open_etcd(etcd_url)
    yield a, b
    a.close()
    b.close()


def test_condition_broken_by_another_client_is_condition_failed(two):
    a, b = two
    a.client.call = _Before(a, lambda: _put(b, b"k", b"theirs"))
    batch = WriteBatch()
    batch.put_if_absent(b"k", b"mine")
    with pytest.raises(ConditionFailedError) as info:
        a.write(batch)
    assert info.value.key == b"k" and info.value.actual == b"theirs"
    assert a.get(b"k") == b"theirs"


def test_condition_still_holding_after_a_compare_failure_is_rebuilt(two):
    a, b = two
    # another client creates and deletes the key: its revision moved, it is still absent
    a.client.call = _Before(a, lambda: (_put(b, b"k", b"x"), _put(b, b"k", None)))
    batch = WriteBatch()
    batch.put_if_absent(b"k", b"mine")
    a.write(batch)
    assert a.get(b"k") == b"mine"


def test_read_changed_by_another_client_is_serialization_failure_naming_the_key(two):
    a, b = two
    _put(a, b"r", b"0")
    snap = a.snapshot()
    assert snap.get(b"r") == b"0"
    _put(b, b"r", b"1")
    batch = WriteBatch()
    batch.put(b"w", b"derived from r")
    batch.validate_reads(snap.seq, [b"r"], [])
    with pytest.raises(SerializationFailure, match=r"read of key b'r' conflicts"):
        a.write(batch)
    assert a.get(b"w") is None


def test_phantom_and_delete_inside_a_read_range_are_conflicts(two):
    a, b = two
    for key in (b"a1", b"a2"):
        _put(a, key, b"x")
    for change in ((b"a15", b"new"), (b"a2", None)):  # an insert into the range; a delete in it
        snap = a.snapshot()
        assert [k for k, _ in snap.scan(b"a", b"b")]
        b_rev = _put(b, *change)
        assert b_rev > snap.seq
        batch = WriteBatch()
        batch.put(b"summary", b"count")
        batch.validate_reads(snap.seq, [], [(b"a", b"b")])
        with pytest.raises(SerializationFailure, match="conflicts"):
            a.write(batch)
    # a range delete by another client is caught by the range-delete guard
    snap = a.snapshot()
    assert snap.get(b"a1") == b"x"
    wipe = WriteBatch()
    wipe.delete_range(b"a", b"b")
    b.write(wipe)
    batch = WriteBatch()
    batch.put(b"summary", b"count")
    batch.validate_reads(snap.seq, [b"a1"], [])
    with pytest.raises(SerializationFailure, match="range delete"):
        a.write(batch)
    assert a.get(b"summary") is None


def test_empty_read_span_and_absent_key_are_guarded_against_inserts(two):
    a, b = two
    _put(a, b"m", b"x")  # a key outside the span
    snap = a.snapshot()
    assert list(snap.scan(b"k", b"l")) == []  # the span held no key at all
    _put(b, b"k5", b"new")  # a phantom appears in it
    batch = WriteBatch()
    batch.put(b"m", b"there are no k keys")
    batch.validate_reads(snap.seq, [], [(b"k", b"l")])
    with pytest.raises(SerializationFailure, match=r"read of key b'k5' conflicts"):
        a.write(batch)
    assert a.get(b"m") == b"x"
    # a key read as absent (a primary key an INSERT claims) and created by another client
    snap = a.snapshot()
    assert snap.get(b"p") is None
    _put(b, b"p", b"theirs")
    batch = WriteBatch()
    batch.put(b"p", b"mine")
    batch.validate_reads(snap.seq, [b"p"], [])
    with pytest.raises(SerializationFailure, match=r"read of key b'p' conflicts"):
        a.write(batch)
    assert a.get(b"p") == b"theirs"
