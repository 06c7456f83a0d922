"""Transaction.put_new_batch: all of a chunk's pairs or none, with the checked keys read once."""

from __future__ import annotations

import pytest

from sqlkv.errors import SerializationFailure
from sqlkv.txn import TxnManager


def _seeded(manager: TxnManager) -> None:
    with manager.begin() as txn:
        txn.put(b"k-stored", b"old")


def _state(txn, keys) -> list:
    return [txn.get(k) for k in keys]


CHECKED = [(b"a1", b"v1"), (b"a2", b"v2")]
PLAIN = [(b"i1", b""), (b"i2", b"")]
ALL = [k for k, _ in CHECKED + PLAIN]


def test_new_keys_are_all_put_and_read_back(manager):
    txn = manager.begin()
    puts = txn.kv_puts
    assert txn.put_new_batch(CHECKED, PLAIN) is True
    assert _state(txn, ALL) == [b"v1", b"v2", b"", b""]
    assert txn.kv_puts == puts + 4
    assert [k for k, _ in txn.scan(b"", None)] == sorted(ALL)
    txn.commit()
    with manager.begin() as reader:
        assert _state(reader, ALL) == [b"v1", b"v2", b"", b""]


@pytest.mark.parametrize("checked, plain", [
    (CHECKED + [(b"k-stored", b"new")], PLAIN),  # a checked key in the snapshot
    (CHECKED + [(b"a1", b"again")], PLAIN),  # a key twice in the chunk
    (CHECKED, PLAIN + [(b"mine", b"x")]),  # a key this transaction has written
    (CHECKED, PLAIN + [(b"gone", b"x")]),  # a key this transaction deleted
])
def test_any_doubt_writes_nothing(manager, checked, plain):
    _seeded(manager)
    txn = manager.begin()
    txn.put(b"mine", b"m")
    txn.delete(b"gone")
    before = txn.write_count
    assert txn.put_new_batch(checked, plain) is False
    assert txn.write_count == before
    assert _state(txn, ALL) == [None] * 4
    assert txn.get(b"k-stored") == b"old"


def test_the_size_limit_refuses_the_batch(manager):
    manager.max_txn_bytes = 100
    txn = manager.begin()
    assert txn.put_new_batch(CHECKED, PLAIN) is False
    assert _state(txn, ALL) == [None] * 4


def test_under_a_delete_range_a_stored_key_is_free_again(manager):
    _seeded(manager)
    txn = manager.begin()
    txn.delete_range(b"k", b"l")  # hides k-stored
    assert txn.put_new_batch(CHECKED + [(b"k-stored", b"new")], PLAIN) is True
    assert txn.get(b"k-stored") == b"new"
    assert txn.put_new_batch([(b"k-other", b"o")], []) is True
    assert txn.put_new_batch([(b"k-other", b"again")], []) is False  # our own entry now
    txn.commit()
    with manager.begin() as reader:
        assert [k for k, _ in reader.scan(b"k", b"l")] == [b"k-other", b"k-stored"]


def test_a_savepoint_rollback_undoes_the_batch(manager):
    txn = manager.begin()
    token = txn.savepoint()
    assert txn.put_new_batch(CHECKED, PLAIN)
    txn.rollback_to(token)
    assert _state(txn, ALL) == [None] * 4
    assert txn.put_new_batch(CHECKED, PLAIN)  # the keys are new again


def test_a_concurrent_insert_of_a_batch_key_fails_the_commit(manager):
    txn = manager.begin()
    assert txn.put_new_batch(CHECKED, PLAIN)
    with manager.begin() as other:
        other.put(b"a2", b"theirs")
    with pytest.raises(SerializationFailure):
        txn.commit()
