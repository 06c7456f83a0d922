"""Flushes and compactions built in worker processes (worker.py) give the same store as builds
in the engine's threads; a worker that dies has its job redone in the thread, losing nothing."""

from __future__ import annotations

import os
import random

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm, worker
from tests.storage.conftest import SMALL, model_scan


def _random_writes(engine, model: dict, rng: random.Random, rounds: int) -> None:
    for round_ in range(rounds):
        batch = WriteBatch()
        for _ in range(200):
            key = b"k%05d" % rng.randrange(4000)
            if rng.random() < 0.85:
                value = b"v%d-" % round_ + key * 3
                batch.put(key, value)
                model[key] = value
            else:
                batch.delete(key)
                model.pop(key, None)
        engine.write(batch)


def _check(engine, model: dict) -> None:
    assert list(engine.scan(b"", None)) == model_scan(model, b"", None, False, None)
    for key in list(model)[:300]:
        assert engine.get(key) == model[key]


def test_builds_in_workers_match_a_dict_model(tmp_path, monkeypatch):
    monkeypatch.setattr(worker, "MIN_WORKER_BYTES", 0)
    path = str(tmp_path / "db")
    engine = open_lsm(path, durability="normal", **SMALL)
    model: dict = {}
    try:
        assert engine._core.builder.prestart()
        rng = random.Random(1)
        _random_writes(engine, model, rng, 30)
        snapshot = engine.snapshot()  # compaction must keep what it sees
        frozen = dict(model)
        _random_writes(engine, model, rng, 30)
        engine.finish_background_work()
        stats = engine.stats()
        assert stats["build_workers"]["jobs"] > 0 and stats["build_workers"]["losses"] == 0
        assert stats["compactions"] > 0
        _check(engine, model)
        assert dict(snapshot.scan(b"", None)) == frozen
        snapshot.close()
        engine.compact()
        _check(engine, model)
    finally:
        engine.close()
    assert os.listdir(os.path.join(path, worker.BUILD_DIR)) == []
    engine = open_lsm(path, durability="normal", **SMALL)
    try:
        _check(engine, model)
        assert engine.verify() == []
    finally:
        engine.close()


def test_a_killed_worker_job_is_redone_in_the_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(worker, "MIN_WORKER_BYTES", 0)
    engine = open_lsm(str(tmp_path / "db"), durability="normal", **SMALL)
    model: dict = {}
    try:
        pool = engine._core.builder
        assert pool.prestart()
        for w in pool._idle:
            w.kill()
            w.proc.wait()
        _random_writes(engine, model, random.Random(2), 30)
        engine.finish_background_work()
        stats = engine.stats()
        assert stats["build_workers"]["losses"] >= 1 and stats["background_error"] is None
        _check(engine, model)
        assert not [n for n in os.listdir(tmp_path / "db" / worker.BUILD_DIR)]
    finally:
        engine.close()
