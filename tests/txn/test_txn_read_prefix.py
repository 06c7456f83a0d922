"""`Transaction.read_prefix` / `read_prefixes` (an index equality's short prefix read): the
pairs a scan of the span gives, own writes winning, and for the conflict check exactly the
span read -- a commit into it fails the reader, one beside it does not, and a read that
answered None (too many pairs) records nothing of its own."""

from __future__ import annotations

import pytest

from sqlkv.errors import SerializationFailure
from sqlkv.storage.kv import prefix_end


def _load(manager, keys: list[bytes]) -> None:
    with manager.begin() as txn:
        for key in keys:
            txn.put(key, b"v" + key)


def _span(prefix: bytes) -> tuple[bytes, bytes]:
    return prefix, prefix_end(prefix)  # type: ignore[return-value]


KEYS = [b"a/1", b"a/2", b"b/1", b"b/2", b"b/3", b"c/1"]


def test_pairs_and_own_writes(manager) -> None:
    _load(manager, KEYS)
    txn = manager.begin()
    assert txn.read_prefix(*_span(b"b/"), 5) == [(k, b"v" + k) for k in KEYS[2:5]]
    assert txn.read_prefix(*_span(b"b/"), 2) is None
    assert txn.read_prefix(*_span(b"x/"), 2) == []
    txn.put(b"b/0", b"mine")
    txn.delete(b"b/2")
    want = [(b"b/0", b"mine"), (b"b/1", b"vb/1"), (b"b/3", b"vb/3")]
    assert txn.read_prefix(*_span(b"b/"), 3) == want
    assert txn.read_prefixes([_span(b"b/"), _span(b"a/"), _span(b"b/")], 3) == \
        [want, [(b"a/1", b"va/1"), (b"a/2", b"va/2")], want]
    txn.rollback()


@pytest.mark.parametrize("batched", [False, True])
def test_the_span_read_is_exactly_the_prefix(manager, batched: bool) -> None:
    _load(manager, KEYS)
    for other, conflicts in ((b"a/9", False), (b"c/0", False), (b"b/25", True)):
        txn = manager.begin()
        if batched:
            assert txn.read_prefixes([_span(b"b/")], 8)[0] is not None
        else:
            assert txn.read_prefix(*_span(b"b/"), 8) is not None
        spans = txn._reads.key_spans()
        assert (spans.points, list(zip(spans.ranges.starts, spans.ranges.ends))) == ([], [_span(b"b/")])
        with manager.begin() as writer:
            writer.put(other, b"w")
        txn.put(b"z", b"own write")  # a read-write transaction: its reads are checked
        if conflicts:
            with pytest.raises(SerializationFailure):
                txn.commit()
        else:
            txn.commit()


def test_a_read_answering_none_records_nothing(manager) -> None:
    _load(manager, KEYS)
    txn = manager.begin()
    assert txn.read_prefix(*_span(b"b/"), 1) is None
    assert txn.read_prefixes([_span(b"b/")], 2) == [None]
    assert len(txn._reads) == 0
    txn.rollback()
