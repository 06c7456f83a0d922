"""Readers scan snapshots while a writer writes and flushes/compactions run underneath."""

from __future__ import annotations

import threading

import pytest

from sqlkv.errors import ConditionFailedError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.memory import MemoryEngine
from tests.storage.conftest import SMALL

KEYS = [b"row%03d" % i for i in range(60)]
BATCHES = 100


def _writer(engine, stop: threading.Event, errors: list) -> None:
    try:
        for n in range(1, BATCHES + 1):
            batch = WriteBatch()
            if n % 10 == 0:
                batch.delete_range(b"row", b"rox")  # wipe, then rewrite in the same batch
            for key in KEYS:
                batch.put(key, b"%06d" % n + b"." * 40)
            engine.write(batch)
            if n % 50 == 0:
                engine.compact()
    except BaseException as exc:  # pragma: no cover - reported by the test
        errors.append(exc)
    finally:
        stop.set()


def _reader(engine, stop: threading.Event, errors: list, checks: list) -> None:
    try:
        while True:
            done = stop.is_set()  # checked first: every reader scans at least once
            with engine.snapshot() as snap:
                first = list(snap.scan(b"row", b"rox"))
                values = {v for _, v in first}
                # every snapshot sees whole batches: one value for all keys, or nothing yet
                assert len(values) <= 1, f"snapshot {snap.seq} saw a torn batch: {sorted(values)[:3]}"
                assert len(first) in (0, len(KEYS))
                assert list(snap.scan(b"row", b"rox", reverse=True)) == first[::-1]
                assert [snap.get(k) for k, _ in first] == [v for _, v in first]
                checks.append(len(first))
            if done:
                break
    except BaseException as exc:
        errors.append(exc)


def _run(engine) -> list:
    stop = threading.Event()
    errors: list = []
    checks: list = []
    threads = [threading.Thread(target=_writer, args=(engine, stop, errors))]
    threads += [threading.Thread(target=_reader, args=(engine, stop, errors, checks)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    assert checks
    final = dict(engine.scan(b"", None))
    assert final == {k: b"%06d" % BATCHES + b"." * 40 for k in KEYS}
    return checks


def test_snapshot_scans_during_writes_flushes_compactions(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _run(engine)
        stats = engine.stats()
        assert stats["flushes"] > 0 and stats["compactions"] > 0
    finally:
        engine.close()


def test_memory_engine_same_contract():
    _run(MemoryEngine())


def test_concurrent_writers_group_commit(tmp_path, monkeypatch):
    """With durability=full, writers waiting while an fsync runs share the next one."""
    import os
    import time

    real_fdatasync = os.fdatasync

    def slow_fdatasync(fd):
        time.sleep(0.02)
        real_fdatasync(fd)

    engine = open_lsm(str(tmp_path), durability="full")
    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
    per_thread = 10

    def write_some(t: int) -> None:
        for i in range(per_thread):
            batch = WriteBatch()
            batch.put(b"t%d-%d" % (t, i), b"x")
            engine.write(batch)

    try:
        threads = [threading.Thread(target=write_some, args=(t,)) for t in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(list(engine.scan(b"t", b"u"))) == 6 * per_thread
        assert engine.stats()["wal_fsyncs"] < 6 * per_thread
    finally:
        engine.close()


def _slow_fdatasync(monkeypatch) -> None:
    import os
    import time

    real_fdatasync = os.fdatasync

    def slow_fdatasync(fd):
        time.sleep(0.01)
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)


def test_write_nowait_under_a_commit_lock_shares_fsyncs(tmp_path, monkeypatch):
    """The transaction manager's pattern: write_nowait under its lock, wait_durable outside."""
    engine = open_lsm(str(tmp_path), durability="full")
    _slow_fdatasync(monkeypatch)
    commit_lock = threading.Lock()
    per_thread, nthreads = 15, 6
    seqs: list[int] = []

    def commit_some(t: int) -> None:
        for i in range(per_thread):
            batch = WriteBatch()
            batch.put(b"t%d-%03d" % (t, i), b"v%d" % i)
            with commit_lock:
                seq = engine.write_nowait(batch)
            engine.wait_durable(seq)
            assert engine.last_seq >= seq  # durable means published
            seqs.append(seq)

    try:
        before = engine.stats()["wal_fsyncs"]
        threads = [threading.Thread(target=commit_some, args=(t,)) for t in range(nthreads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        commits = nthreads * per_thread
        assert sorted(seqs) == list(range(1, commits + 1))
        expected = [(b"t%d-%03d" % (t, i), b"v%d" % i) for t in range(nthreads) for i in range(per_thread)]
        assert list(engine.scan(b"t", b"u")) == sorted(expected)
        assert engine.stats()["wal_fsyncs"] - before < commits
    finally:
        engine.close()


def test_write_nowait_is_invisible_until_durable(tmp_path):
    engine = open_lsm(str(tmp_path), durability="full")
    try:
        batch = WriteBatch()
        batch.put_if_absent(b"k", b"first")
        seq = engine.write_nowait(batch)
        assert engine.get(b"k") is None  # not fsynced yet: readers must not see it
        assert engine.last_seq < seq
        with engine.snapshot() as snap:
            assert snap.seq < seq
        again = WriteBatch()
        again.put_if_absent(b"k", b"second")  # conditions see the applied, undurable batch
        with pytest.raises(ConditionFailedError):
            engine.write_nowait(again)
        engine.wait_durable(seq)
        assert engine.get(b"k") == b"first"
        assert engine.last_seq == seq
        engine.wait_durable(seq)  # already durable: returns at once
    finally:
        engine.close()


@pytest.mark.parametrize("durability", ["normal", "off"])
def test_write_nowait_is_visible_at_once_below_full(tmp_path, durability):
    engine = open_lsm(str(tmp_path), durability=durability)
    try:
        batch = WriteBatch()
        batch.put(b"k", b"v")
        seq = engine.write_nowait(batch)
        assert engine.get(b"k") == b"v" and engine.last_seq == seq
        engine.wait_durable(seq)
    finally:
        engine.close()
    engine = open_lsm(str(tmp_path))
    try:
        assert engine.get(b"k") == b"v"
    finally:
        engine.close()


def test_wait_durable_after_close_returns(tmp_path):
    engine = open_lsm(str(tmp_path), durability="full")
    batch = WriteBatch()
    batch.put(b"k", b"v")
    seq = engine.write_nowait(batch)
    engine.close()  # close syncs the WAL
    engine.wait_durable(seq)
    engine = open_lsm(str(tmp_path))
    try:
        assert engine.get(b"k") == b"v"
    finally:
        engine.close()
