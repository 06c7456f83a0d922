"""Lifecycle, limits and bookkeeping: ended transactions, size limit, callbacks, the conflict
log, abandoned transactions, writes around the manager, big transactions."""

from __future__ import annotations

import gc
import itertools

import pytest

from sqlkv.errors import OperationalError, ProgrammingError, SerializationFailure
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.memory import MemoryEngine
from sqlkv.txn import Transaction, TxnManager


def test_ended_transaction_rejects_every_use(mem_manager: TxnManager) -> None:
    for end in ("commit", "rollback"):
        txn = mem_manager.begin()
        txn.put(b"k", b"v")
        getattr(txn, end)()
        assert not txn.active
        for call in (
            lambda: txn.get(b"k"),
            lambda: txn.scan(b"", None),
            lambda: txn.put(b"k", b"v"),
            lambda: txn.delete(b"k"),
            lambda: txn.delete_range(b"a", b"b"),
            lambda: txn.put_if_absent(b"k", b"v"),
            lambda: txn.savepoint(),
            lambda: txn.commit(),
            lambda: txn.on_commit(lambda: None),
        ):
            with pytest.raises(ProgrammingError, match="no longer active"):
                call()
        txn.rollback()  # ending an ended transaction again is a no-op


def test_open_scan_stops_when_transaction_ends(mem_manager: TxnManager) -> None:
    setup = mem_manager.begin()
    for i in range(10):
        setup.put(b"%d" % i, b"v")
    setup.commit()
    txn = mem_manager.begin()
    pairs = txn.scan(b"", None)
    next(pairs)
    unstarted = txn.scan(b"", None)
    txn.rollback()
    with pytest.raises(ProgrammingError):
        next(pairs)
    with pytest.raises(ProgrammingError):
        next(unstarted)


def test_read_only_transaction_cannot_write(mem_manager: TxnManager) -> None:
    txn = mem_manager.begin(read_only=True)
    for call in (lambda: txn.put(b"k", b"v"), lambda: txn.delete(b"k"),
                 lambda: txn.delete_range(b"a", b"b"), lambda: txn.put_if_absent(b"k", b"v")):
        with pytest.raises(ProgrammingError, match="read-only"):
            call()
    assert txn.commit() is None


def test_transaction_too_large(mem_manager: TxnManager) -> None:
    mem_manager.max_txn_bytes = 10_000
    txn = mem_manager.begin()
    with pytest.raises(OperationalError, match="transaction too large"):
        for i in itertools.count():
            txn.put(b"key%06d" % i, b"x" * 100)
    count, size = txn.write_count, txn.buffered_bytes
    assert 0 < size <= 10_000
    assert txn.get(b"key%06d" % count) is None  # the refused put left nothing behind
    txn.delete_range(b"key", b"kez")  # shrinking is always allowed
    assert txn.buffered_bytes < size
    txn.put(b"after", b"ok")
    txn.commit()
    assert [k for k, _ in mem_manager.begin().scan(b"", None)] == [b"after"]


def test_on_commit_callbacks(mem_manager: TxnManager) -> None:
    calls: list[str] = []
    txn = mem_manager.begin()
    txn.on_commit(lambda: calls.append("a"))
    txn.put(b"k", b"v")
    txn.rollback()
    assert calls == []

    t1, t2 = mem_manager.begin(), mem_manager.begin()
    t1.get(b"k")
    t1.put(b"k", b"1")
    t1.on_commit(lambda: calls.append("failed commit"))
    t2.put(b"k", b"2")
    t2.on_commit(lambda: calls.append("t2"))
    t2.commit()
    with pytest.raises(SerializationFailure):
        t1.commit()
    assert calls == ["t2"]

    txn = mem_manager.begin()
    txn.put(b"k", b"3")

    def broken() -> None:
        raise RuntimeError("cache invalidation failed")

    txn.on_commit(broken)
    txn.on_commit(lambda: calls.append("after broken"))
    with pytest.raises(RuntimeError):
        txn.commit()
    assert calls == ["t2", "after broken"]
    assert mem_manager.begin().get(b"k") == b"3"  # the commit itself stands


def test_snapshots_closed_and_log_pruned(mem_engine: MemoryEngine, mem_manager: TxnManager) -> None:
    old = mem_manager.begin()
    old.get(b"x")
    for i in range(5):
        writer = mem_manager.begin()
        writer.put(b"k%d" % i, b"v")
        writer.commit()
    stats = mem_manager.stats()
    assert stats["active"] == 1 and stats["conflict_log_entries"] == 5
    assert mem_engine.stats()["open_snapshots"] == 1
    old.rollback()
    stats = mem_manager.stats()
    assert stats["active"] == 0 and stats["conflict_log_entries"] == 0
    assert mem_engine.stats()["open_snapshots"] == 0


def test_abandoned_transaction_is_released_when_collected(mem_engine, mem_manager) -> None:
    txn = mem_manager.begin()
    txn.get(b"x")
    writer = mem_manager.begin()
    writer.put(b"x", b"1")
    writer.commit()
    assert mem_manager.stats()["conflict_log_entries"] == 1
    del txn
    gc.collect()
    assert mem_manager.stats()["active"] == 0
    assert mem_manager.stats()["conflict_log_entries"] == 0
    assert mem_engine.stats()["open_snapshots"] == 0


def test_abandoned_read_only_transaction_is_released_when_collected(mem_engine, mem_manager) -> None:
    txn = mem_manager.begin(read_only=True)
    txn.get(b"x")
    assert mem_manager.stats()["active_read_only"] == 1
    assert mem_engine.stats()["open_snapshots"] == 1
    del txn
    gc.collect()
    assert mem_manager.stats()["active"] == 0
    assert mem_engine.stats()["open_snapshots"] == 0


def test_a_read_only_transaction_is_listed_until_it_ends(mem_engine, mem_manager) -> None:
    """Registered once, after its snapshot: listed with that snapshot, gone at commit; its end
    leaves the conflict log to the read-write transaction that still needs it."""
    old = mem_manager.begin()
    old.get(b"x")
    writer = mem_manager.begin()
    writer.put(b"x", b"1")
    writer.commit()
    reader = mem_manager.begin(read_only=True)
    listed = {t["txn_id"]: t for t in mem_manager.active_transactions()}
    assert listed[reader.txn_id]["read_only"] is True
    assert listed[reader.txn_id]["snapshot_seq"] == reader.snapshot_seq == writer.commit_seq
    assert reader.get(b"x") == b"1"
    reader.commit()
    assert reader.txn_id not in {t["txn_id"] for t in mem_manager.active_transactions()}
    assert mem_manager.stats()["conflict_log_entries"] == 1  # old can still conflict with it
    old.put(b"y", b"2")
    with pytest.raises(SerializationFailure):
        old.commit()
    assert mem_manager.stats()["conflict_log_entries"] == 0
    assert mem_engine.stats()["open_snapshots"] == 0


def test_writes_around_the_manager_restart_concurrent_transactions(mem_engine, mem_manager) -> None:
    txn = mem_manager.begin()
    assert txn.get(b"a") is None
    batch = WriteBatch()
    batch.put(b"unrelated", b"1")
    mem_engine.write(batch)  # not through the manager: its keys are unknown to the log
    later = mem_manager.begin()
    txn.put(b"b", b"2")
    with pytest.raises(SerializationFailure, match="outside the transaction manager"):
        txn.commit()
    later.get(b"a")
    later.put(b"b", b"3")
    assert later.commit() is not None  # began after the foreign write: unaffected


def test_conflict_log_limit_restarts_too_old_transactions(mem_manager: TxnManager) -> None:
    mem_manager.max_log_keys = 3
    old = mem_manager.begin()
    old.get(b"unrelated")
    for i in range(5):
        writer = mem_manager.begin()
        writer.put(b"k%d" % i, b"v")
        writer.commit()
    assert mem_manager.stats()["conflict_log_keys"] <= 3
    old.put(b"mine", b"v")
    with pytest.raises(SerializationFailure, match="older than the conflict history"):
        old.commit()


def test_for_engine_and_engine_lifetime() -> None:
    e1, e2 = MemoryEngine(), MemoryEngine()
    assert TxnManager.for_engine(e1) is TxnManager.for_engine(e1)
    assert TxnManager.for_engine(e1) is not TxnManager.for_engine(e2)
    orphan = TxnManager(MemoryEngine())  # the manager does not keep its engine alive
    gc.collect()
    with pytest.raises(OperationalError, match="engine"):
        orphan.begin()


def test_context_manager_and_run(mem_manager: TxnManager) -> None:
    with mem_manager.begin() as txn:
        txn.put(b"n", b"0")
    with pytest.raises(KeyError), mem_manager.begin() as txn:
        txn.put(b"n", b"99")
        raise KeyError("boom")
    assert mem_manager.begin().get(b"n") == b"0"

    attempts: list[int] = []

    def increment(txn: Transaction) -> int:
        value = int(txn.get(b"n")) + 1
        if not attempts:  # a concurrent writer sneaks in during the first attempt
            with mem_manager.begin() as other:
                other.put(b"n", b"10")
        attempts.append(value)
        txn.put(b"n", str(value).encode())
        return value

    assert mem_manager.run(increment) == 11
    assert attempts == [1, 11]
    assert mem_manager.begin().get(b"n") == b"11"


def test_nested_savepoints(mem_manager: TxnManager) -> None:
    txn = mem_manager.begin()
    txn.put(b"a", b"1")
    outer = txn.savepoint()
    txn.put(b"b", b"2")
    inner = txn.savepoint()
    txn.delete_range(b"", b"z")
    txn.put(b"c", b"3")
    assert list(txn.scan(b"", None)) == [(b"c", b"3")]
    txn.rollback_to(inner)
    assert list(txn.scan(b"", None)) == [(b"a", b"1"), (b"b", b"2")]
    txn.rollback_to(outer)  # closes inner
    with pytest.raises(ProgrammingError, match="savepoint"):
        txn.release(inner)
    assert list(txn.scan(b"", None)) == [(b"a", b"1")]
    txn.release(outer)
    assert txn.commit() is not None


def test_big_transaction(mem_engine: MemoryEngine, mem_manager: TxnManager) -> None:
    n = 200_000
    setup = mem_manager.begin()
    for i in range(0, n, 2):  # even keys exist before the big transaction
        setup.put(b"row/%07d" % i, b"old")
    setup.commit()
    txn = mem_manager.begin()
    for i in range(n):
        txn.put(b"row/%07d" % i, b"new%d" % i)
    txn.delete_range(b"row/%07d" % 1000, b"row/%07d" % 2000)
    assert txn.write_count == n - 1000 + 1
    assert sum(1 for _ in txn.scan(b"row/", b"row0")) == n - 1000
    assert txn.commit() is not None
    assert mem_engine.stats()["batches_written"] == 2  # one batch per commit
    check = mem_manager.begin(read_only=True)
    assert check.get(b"row/%07d" % 1500) is None
    assert check.get(b"row/%07d" % (n - 1)) == b"new%d" % (n - 1)
    assert sum(1 for _ in check.scan(b"row/", b"row0")) == n - 1000


def test_statement_savepoints_stay_cheap(mem_manager: TxnManager) -> None:
    """100k single-row statements, each in its own savepoint; every tenth one fails."""
    txn = mem_manager.begin()
    for i in range(100_000):
        token = txn.savepoint()
        txn.put(b"k%06d" % i, b"v")
        if i % 10 == 9:
            txn.rollback_to(token)
        txn.release(token)
    assert txn.write_count == 90_000
    txn.commit()
    assert sum(1 for _ in mem_manager.begin().scan(b"k", b"l")) == 90_000


def test_statement_scan_skips_its_own_writes(mem_manager: TxnManager) -> None:
    """The Halloween problem: moving rows forward in the scanned range, copying a table."""
    rows = {b"t/%02d" % i: b"v%d" % i for i in range(1, 8)}
    setup = mem_manager.begin()
    for key, value in rows.items():
        setup.put(key, value)
    setup.commit()

    txn = mem_manager.begin()
    statement = txn.savepoint()  # UPDATE t SET id = id + 50
    moved = 0
    for key, value in txn.scan(b"t/", b"t0", skip_written_since=statement):
        txn.delete(key)
        txn.put(b"t/%02d" % (int(key[2:]) + 50), value)
        moved += 1
    txn.release(statement)
    assert moved == len(rows)

    statement = txn.savepoint()  # INSERT INTO t SELECT id + 1000, v FROM t  (reverse scan)
    copied = 0
    for key, value in txn.scan(b"t/", b"t0", reverse=True, skip_written_since=statement):
        txn.put(b"t/%04d" % (int(key[2:]) + 1000), value)
        copied += 1
    txn.release(statement)
    assert copied == len(rows)
    expected = {b"t/%02d" % (int(k[2:]) + 50): v for k, v in rows.items()}
    expected.update({b"t/%04d" % (int(k[2:]) + 1050): v for k, v in rows.items()})
    assert dict(txn.scan(b"t/", b"t0")) == expected  # without the option, all rows are seen
    txn.commit()
    assert dict(mem_manager.begin().scan(b"t/", b"t0")) == expected


def test_written_since_follows_nested_rollbacks(mem_manager: TxnManager) -> None:
    txn = mem_manager.begin()
    txn.put(b"before", b"1")
    statement = txn.savepoint()
    pairs = txn.scan(b"", None, skip_written_since=statement)
    assert next(pairs) == (b"before", b"1")  # written before the savepoint: visible
    txn.put(b"k", b"1")
    nested = txn.savepoint()
    txn.put(b"j", b"1")
    txn.rollback_to(nested)  # j's write is undone: it is no longer "written since"
    txn.put(b"m", b"1")
    assert list(pairs) == []  # k and m were written since the savepoint
    written = txn._buffer.written_since(statement)
    assert b"k" in written and b"m" in written and b"before" not in written
    txn.put(b"j2", b"x")
    inner = txn.savepoint()
    txn.put(b"j3", b"x")
    assert b"j3" in written
    txn.rollback_to(inner)
    txn.put(b"n", b"x")
    assert b"j3" not in written and b"n" in written and b"j2" in written
    txn.release(statement)
    with pytest.raises(ProgrammingError, match="savepoint"):
        txn.scan(b"", None, skip_written_since=statement)


def test_limited_scan_refills_when_its_own_deletes_hide_the_page(manager: TxnManager) -> None:
    setup = manager.begin()
    for i in range(10):
        setup.put(b"k%d" % i, b"v")
    setup.commit()
    for reverse in (False, True):
        txn = manager.begin()
        pairs = txn.scan(b"k", b"l", reverse=reverse, limit=3)
        first = next(pairs)[0]
        ahead = range(1, 6) if not reverse else range(4, 9)
        for i in ahead:  # delete the next five keys the scan would have returned
            txn.delete(b"k%d" % i)
        rest = [k for k, _ in pairs]
        assert [first] + rest == ([b"k0", b"k6", b"k7"] if not reverse else [b"k9", b"k3", b"k2"])
        txn.rollback()
