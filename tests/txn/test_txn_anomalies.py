"""The classic isolation anomalies at KV level, each stopped by one transaction restarting.

Every scenario interleaves two transactions step by step in one thread, so the order is exact.
Where the anomaly needs both to commit, the test shows the first commits and the second fails
with SerializationFailure; then the retry (run serially) gives the result a serial order gives.
"""

from __future__ import annotations

import itertools

import pytest

from sqlkv.errors import ConditionFailedError, SerializationFailure
from sqlkv.txn import TxnManager


def num(value: bytes | None) -> int:
    return int(value or b"0")


def enc(n: int) -> bytes:
    return str(n).encode()


def load(manager: TxnManager, pairs: dict[bytes, bytes]) -> None:
    txn = manager.begin()
    for key, value in pairs.items():
        txn.put(key, value)
    txn.commit()


def test_lost_update(manager: TxnManager) -> None:
    load(manager, {b"counter": enc(10)})
    t1, t2 = manager.begin(), manager.begin()
    t1.put(b"counter", enc(num(t1.get(b"counter")) + 1))
    t2.put(b"counter", enc(num(t2.get(b"counter")) + 1))
    t1.commit()
    with pytest.raises(SerializationFailure, match=r"restart transaction.*SQLSTATE 40001"):
        t2.commit()
    assert not t2.active
    retry = manager.begin()
    retry.put(b"counter", enc(num(retry.get(b"counter")) + 1))
    retry.commit()
    assert num(manager.begin(read_only=True).get(b"counter")) == 12
    assert manager.stats()["aborts"] == 1


def test_write_skew_two_doctors_on_call(manager: TxnManager) -> None:
    """Each doctor checks that someone else is on call, then goes off call."""
    load(manager, {b"oncall/alice": b"1", b"oncall/bob": b"1"})

    def go_off_call(txn, me: bytes) -> None:
        on_call = [k for k, v in txn.scan(b"oncall/", b"oncall0") if v == b"1"]
        assert len(on_call) == 2  # both see two doctors on call
        txn.put(b"oncall/" + me, b"0")

    t1, t2 = manager.begin(), manager.begin()
    go_off_call(t1, b"alice")
    go_off_call(t2, b"bob")
    t1.commit()
    with pytest.raises(SerializationFailure):
        t2.commit()
    still_on = [k for k, v in manager.begin().scan(b"oncall/", b"oncall0") if v == b"1"]
    assert still_on == [b"oncall/bob"]


def test_read_skew(manager: TxnManager) -> None:
    """x + y == 100 always; a reader that writes from both must not commit on a torn view."""
    load(manager, {b"x": enc(50), b"y": enc(50)})
    reader = manager.begin()
    seen_x = num(reader.get(b"x"))
    mover = manager.begin()
    mover.put(b"x", enc(num(mover.get(b"x")) - 30))
    mover.put(b"y", enc(num(mover.get(b"y")) + 30))
    mover.commit()
    seen_y = num(reader.get(b"y"))
    assert seen_x + seen_y == 100  # the snapshot is consistent...
    reader.put(b"sum", enc(seen_x + seen_y))
    with pytest.raises(SerializationFailure):  # ...and its read of x is now stale
        reader.commit()
    assert manager.begin().get(b"sum") is None


def test_phantom_through_range_scan(manager: TxnManager) -> None:
    load(manager, {b"order/1": b"10", b"order/2": b"20"})
    summer = manager.begin()
    total = sum(num(v) for _, v in summer.scan(b"order/", b"order0"))
    inserter = manager.begin()
    inserter.put(b"order/3", b"30")  # a phantom: a new row inside the scanned range
    inserter.commit()
    summer.put(b"total", enc(total))
    with pytest.raises(SerializationFailure):
        summer.commit()


def test_insert_outside_scanned_range_does_not_conflict(manager: TxnManager) -> None:
    load(manager, {b"order/1": b"10"})
    summer = manager.begin()
    list(summer.scan(b"order/", b"order0"))
    other = manager.begin()
    other.put(b"order0", b"x")  # the range end is exclusive
    other.put(b"orde", b"x")
    other.commit()
    summer.put(b"total", b"10")
    assert summer.commit() is not None


def test_partially_consumed_scan_records_only_what_was_pulled(manager: TxnManager) -> None:
    load(manager, {enc(k): b"v" for k in range(10, 20)})
    # Forward: pulled 10, 11, 12; a write at 15 is beyond what the reader depended on.
    reader = manager.begin()
    assert [k for k, _ in itertools.islice(reader.scan(b"1", b"2"), 3)] == [b"10", b"11", b"12"]
    writer = manager.begin()
    writer.put(b"15", b"changed")
    writer.commit()
    reader.put(b"out", b"1")
    assert reader.commit() is not None
    # A write at the last key pulled (inclusive end) conflicts.
    reader = manager.begin()
    list(itertools.islice(reader.scan(b"1", b"2"), 3))
    writer = manager.begin()
    writer.put(b"12", b"changed")
    writer.commit()
    reader.put(b"out", b"2")
    with pytest.raises(SerializationFailure):
        reader.commit()


def test_reverse_scan_with_limit_records_tail_span(manager: TxnManager) -> None:
    load(manager, {enc(k): b"v" for k in range(10, 20)})
    reader = manager.begin()
    assert [k for k, _ in reader.scan(b"1", b"2", reverse=True, limit=2)] == [b"19", b"18"]
    writer = manager.begin()
    writer.put(b"17", b"changed")  # below the last key pulled: not read
    writer.commit()
    reader.put(b"out", b"1")
    reader.commit()
    reader = manager.begin()
    list(reader.scan(b"1", b"2", reverse=True, limit=2))
    writer = manager.begin()
    writer.put(b"185", b"new")  # between 18 and 19: inside the span read
    writer.commit()
    reader.put(b"out", b"2")
    with pytest.raises(SerializationFailure):
        reader.commit()


def test_exhausted_scan_covers_whole_requested_range(manager: TxnManager) -> None:
    load(manager, {b"a": b"1"})
    reader = manager.begin()
    assert list(reader.scan(b"a", b"m", limit=5)) == [(b"a", b"1")]
    writer = manager.begin()
    writer.put(b"l", b"late")  # past the last key, but the scan ran out: the gap was read
    writer.commit()
    reader.put(b"out", b"1")
    with pytest.raises(SerializationFailure):
        reader.commit()


def test_unique_insert_race(manager: TxnManager) -> None:
    t1, t2 = manager.begin(), manager.begin()
    t1.put_if_absent(b"users/email/ann@x", b"1")
    t2.put_if_absent(b"users/email/ann@x", b"2")  # both see the key absent
    t1.commit()
    with pytest.raises(SerializationFailure):
        t2.commit()
    retry = manager.begin()
    with pytest.raises(ConditionFailedError) as info:
        retry.put_if_absent(b"users/email/ann@x", b"2")
    assert info.value.actual == b"1"
    retry.rollback()


def test_blind_writes_to_the_same_key_both_commit(manager: TxnManager) -> None:
    """Writes without reads have a serial order (commit order): no restart needed."""
    t1, t2 = manager.begin(), manager.begin()
    t1.put(b"k", b"1")
    t2.put(b"k", b"2")
    t1.commit()
    t2.commit()
    assert manager.begin().get(b"k") == b"2"


def test_reading_own_write_is_not_a_dependency(manager: TxnManager) -> None:
    t1, t2 = manager.begin(), manager.begin()
    t1.put(b"k", b"1")
    t2.put(b"k", b"2")
    t2.commit()
    assert t1.get(b"k") == b"1"
    t1.commit()
    assert manager.begin().get(b"k") == b"1"


def test_delete_range_conflicts_with_reads_in_the_range(manager: TxnManager) -> None:
    load(manager, {b"t/1": b"a", b"t/2": b"b"})
    reader = manager.begin()
    assert reader.get(b"t/2") == b"b"
    truncate = manager.begin()
    truncate.delete_range(b"t/", b"t0")
    truncate.commit()
    reader.put(b"copy", b"b")
    with pytest.raises(SerializationFailure):
        reader.commit()


def test_read_only_transactions_never_abort(manager: TxnManager) -> None:
    load(manager, {b"x": b"1", b"y": b"1"})
    ro = manager.begin(read_only=True)
    assert ro.get(b"x") == b"1"
    for value in (b"2", b"3"):
        writer = manager.begin()
        writer.put(b"x", value)
        writer.put(b"y", value)
        writer.commit()
    assert ro.get(b"y") == b"1"  # still the snapshot
    assert list(ro.scan(b"", None)) == [(b"x", b"1"), (b"y", b"1")]
    assert ro.commit() is None
    assert manager.stats()["aborts"] == 0


def test_long_running_scan_sees_none_of_the_later_commits(manager: TxnManager) -> None:
    initial = {b"row/%05d" % i: enc(i) for i in range(2000)}
    load(manager, initial)
    reader = manager.begin(read_only=True)
    pairs = reader.scan(b"row/", b"row0")
    seen = dict(itertools.islice(pairs, 100))
    for i in range(0, 2000, 7):  # rewrite, delete and insert rows all over the range
        writer = manager.begin()
        writer.put(b"row/%05d" % i, b"new")
        writer.delete(b"row/%05d" % (i + 1))
        writer.put(b"row/%05d+" % i, b"inserted")
        writer.commit()
    seen.update(pairs)
    assert seen == initial
    reader.commit()
