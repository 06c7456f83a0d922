"""`Transaction.scan_columns` (CREATE INDEX's backfill reads its table as ``(keys, values)``
lists): the pairs `scan_batches` hands out, own writes winning once there are any (also when
written between two lists), and for the conflict check the span read."""

from __future__ import annotations

import pytest

from sqlkv.errors import SerializationFailure
from sqlkv.storage.kv import prefix_end

KEYS = [b"t/%04d" % i for i in range(500)]


def _load(manager) -> None:
    with manager.begin() as txn:
        for key in KEYS:
            txn.put(key, b"v" + key)


def _flat(lists) -> list[tuple[bytes, bytes]]:
    return [pair for keys, values in lists for pair in zip(keys, values)]


@pytest.mark.parametrize("size", [1, 37, 4096])
def test_the_pairs_of_scan_batches(manager, size: int) -> None:
    _load(manager)
    with manager.begin() as txn:
        start, end = b"t/0100", b"t/0421"
        lists = list(txn.scan_columns(start, end, size))
        assert _flat(lists) == [(k, b"v" + k) for k in KEYS[100:421]]
        assert all(len(keys) >= size for keys, _values in lists[:-1])
        assert list(txn.scan_columns(end, start, size)) == []


def test_own_writes_win_before_and_between_lists(manager) -> None:
    _load(manager)
    txn = manager.begin()
    txn.put(b"t/0003", b"mine")
    txn.delete(b"t/0004")
    expected = [(k, b"mine" if k == b"t/0003" else b"v" + k) for k in KEYS if k != b"t/0004"]
    assert _flat(txn.scan_columns(b"t/", prefix_end(b"t/"), 50)) == expected
    txn.rollback()
    txn = manager.begin()
    lists = txn.scan_columns(b"t/", prefix_end(b"t/"), 50)
    first = next(lists)
    txn.put(b"t/0499", b"late")  # after the first list: the rest is read with it
    txn.delete(b"t/0300")
    rest = _flat(lists)
    assert _flat([first]) + rest == [(k, b"late" if k == b"t/0499" else b"v" + k)
                                     for k in KEYS if k != b"t/0300"]
    txn.rollback()


@pytest.mark.parametrize("other, conflicts", [(b"t/0250x", True), (b"u/1", False)])
def test_the_span_read_is_checked(manager, other: bytes, conflicts: bool) -> None:
    _load(manager)
    txn = manager.begin()
    assert len(_flat(txn.scan_columns(b"t/", prefix_end(b"t/"), 64))) == len(KEYS)
    with manager.begin() as writer:
        writer.put(other, b"w")
    txn.put(b"z", b"own write")
    if conflicts:
        with pytest.raises(SerializationFailure):
            txn.commit()
    else:
        txn.commit()
