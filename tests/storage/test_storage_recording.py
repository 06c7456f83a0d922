"""RecordingEngine: every call reaches the wrapped engine; applied write batches are kept."""

from __future__ import annotations

import pytest

from sqlkv.errors import ConditionFailedError, IntegrityError
from sqlkv.sql import Database, Session
from sqlkv.storage import MemoryEngine
from sqlkv.storage.kv import OP_PUT, WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.recording import RecordingEngine


def test_keeps_applied_batches_and_not_refused_ones():
    engine = RecordingEngine(MemoryEngine())
    ok = WriteBatch()
    ok.put_if_absent(b"a", b"1")
    engine.write(ok)
    clash = WriteBatch()
    clash.put_if_absent(b"a", b"2")  # the key exists: the inner engine refuses the batch
    with pytest.raises(ConditionFailedError):
        engine.write(clash)
    assert engine.batches == [ok]
    assert engine.get(b"a") == b"1"


def test_sql_statements_record_their_commits_only():
    engine = RecordingEngine(MemoryEngine())
    session = Session(Database(":memory:", engine, None))
    session.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
    engine.batches.clear()
    session.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    assert len(engine.batches) == 1
    puts = [key for op, key, _ in engine.batches[0].ops if op == OP_PUT]
    assert len(puts) == 2
    with pytest.raises(IntegrityError):
        session.execute("INSERT INTO t VALUES (3, 'z'), (1, 'again')")
    assert len(engine.batches) == 1  # the failed statement wrote nothing
    session.close()


def test_forwards_figures_and_bulk_loads_to_the_wrapped_lsm(tmp_path):
    inner = open_lsm(str(tmp_path / "db"))
    engine = RecordingEngine(inner)
    try:
        seq = engine.ingest([(b"k%03d" % i, b"v") for i in range(50)])
        assert seq == engine.last_seq == inner.last_seq
        assert len(engine.batches) == 1 and len(engine.batches[0].ops) == 50  # recorded, as one batch
        assert engine.get(b"k007") == b"v"
        engine.flush()
        assert engine.approximate_sizes([(b"k", b"l")]) == inner.approximate_sizes([(b"k", b"l")])
        assert engine.approximate_sizes([(b"k", b"l")])[0][0] > 0
        assert engine.latencies() is inner.latencies() is not None
        assert engine.recent_compactions() == inner.recent_compactions()
    finally:
        engine.close()
