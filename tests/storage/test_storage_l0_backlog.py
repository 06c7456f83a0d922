"""A level-0 backlog (what a crash under heavy writes leaves) does not stop writers for the
length of a whole L0 -> L1 merge: the picker first merges a few of the oldest L0 tables into
one, and only then does the full merge."""

from __future__ import annotations

import random

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.compaction import CompactionOptions, pick_compaction


def _backlog(path: str, tables: int, rng: random.Random) -> dict[bytes, bytes]:
    """``tables`` overlapping L0 tables (no background threads, so nothing compacts them)."""
    engine = open_lsm(path, memtable_size=4096, background_threads=False, l0_trigger=1000,
                      l0_slowdown=1000, l0_stop=1000)
    model = {}
    for t in range(tables):
        batch = WriteBatch()
        for _ in range(60):
            key = b"k%05d" % rng.randrange(3000)
            if rng.random() < 0.1 and key in model:
                batch.delete(key)
                model.pop(key)
            else:
                model[key] = b"t%d" % t * 10
                batch.put(key, model[key])
        engine.write(batch)
        engine.flush()
    assert len(engine._core.version.levels[0]) == tables
    engine.close()
    return model


def test_the_picker_merges_just_enough_old_l0_tables_when_writers_are_stopped(tmp_path):
    _backlog(str(tmp_path), 12, random.Random(1))
    engine = open_lsm(str(tmp_path), background_threads=False)
    try:
        version = engine._core.version
        opts = CompactionOptions(l0_trigger=4, l0_stop=10)
        job = pick_compaction(version, opts, safe_seq=engine.last_seq, pointers={})
        assert (job.reason, job.level, job.output_level) == ("l0-intra", 0, 0)
        assert job.inputs == version.levels[0][-4:]  # the 4 oldest: 12 -> 9 tables, under 10
        assert job.next_inputs == []
        below = pick_compaction(version, CompactionOptions(l0_trigger=4, l0_stop=13),
                                safe_seq=engine.last_seq, pointers={})
        assert below.reason == "l0" and len(below.inputs) == 12  # no stop: the usual full merge
    finally:
        engine.close()


def test_a_reopened_backlog_compacts_down_and_keeps_every_version_right(tmp_path):
    rng = random.Random(7)
    model = _backlog(str(tmp_path), 14, rng)
    engine = open_lsm(str(tmp_path), memtable_size=4096, l0_trigger=2, l0_slowdown=6, l0_stop=8)
    try:
        for i in range(40):  # writers go on while the backlog drains
            batch = WriteBatch()
            key = b"k%05d" % rng.randrange(3000)
            batch.put(key, b"after%d" % i)
            model[key] = b"after%d" % i
            engine.write(batch)
        engine.finish_background_work()
        assert len(engine._core.version.levels[0]) < 8
        assert engine.stats()["compactions"] >= 2
        assert dict(engine.scan(b"", None)) == dict(sorted(model.items()))
        for key in list(model)[:200]:
            assert engine.get(key) == model[key]
    finally:
        engine.close()
    engine = open_lsm(str(tmp_path))
    try:
        assert dict(engine.scan(b"", None)) == dict(sorted(model.items()))
    finally:
        engine.close()
