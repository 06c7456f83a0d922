"""Randomized differential test of `get_many`'s hot rows (lsm/multiget.py) against a dict model.

A hot row is a value remembered by key with its table's number and its block's ``simple_seq``:
a later `get_many` that reaches the same table takes it without reading the block. It must
never answer a stale value. Two engines in one process (their tables numbered alike, so a
key's table number is the same in both) take random batches of puts, deletes and range
deletions, flushes, compactions, ingestions (every pair of an ingestion has one new seq),
scans (a scan leaves the blocks decoded: the blocks whose every version a read sees are
where hot rows come from) and reopens, with a small `HOT_ROWS_MAX` so the rows are dropped
and made again. After each step every live snapshot -- old ones included, which must still
see the values of their time -- answers `get_many` of random keys (some repeated, some
absent) as the model of its time does, and a fresh snapshot answers as the model now.
"""

from __future__ import annotations

import random

import pytest

from sqlkv.storage.lsm import multiget, open_lsm
from tests.storage.conftest import SMALL, apply_ops, to_batch

KEY_COUNT = 400
# small tables and blocks (flushes and compactions happen), a cache holding every block decoded
OPTIONS = dict(SMALL, cache_size=1 << 22)


def _key(i: int) -> bytes:
    # a long shared prefix, as a table's row keys have, and keys of several lengths
    return b"/Table/106/1/" + (b"%d" % i) * (1 + i % 3)


KEYS = sorted(map(_key, range(KEY_COUNT)))  # in the engine's order: a range deletion's span


class _Engine:
    """One engine, its model now and its open snapshots with the model each one saw."""

    def __init__(self, path: str, tag: bytes, ranges: bool) -> None:
        self.path, self.tag, self.ranges = path, tag, ranges
        self.engine = open_lsm(path, durability="off", background_threads=False, **OPTIONS)
        self.model: dict[bytes, bytes] = {}
        self.snaps: list[tuple[object, dict[bytes, bytes]]] = []

    def write(self, rng: random.Random, step: int) -> None:
        ops: list[tuple] = []
        for _ in range(rng.randrange(1, 40)):
            i = rng.randrange(KEY_COUNT)
            roll = rng.random()
            if roll < 0.8:
                ops.append(("put", _key(i), self.tag + b"%d-%d" % (step, i) * rng.randrange(1, 4)))
            elif roll < 0.97 or not self.ranges:
                ops.append(("delete", _key(i)))
            else:  # a short span of keys
                ops.append(("range", KEYS[i], KEYS[min(KEY_COUNT - 1, i + rng.randrange(1, 12))]))
        self.engine.write(to_batch(ops))
        apply_ops(self.model, ops)

    def ingest(self, rng: random.Random, step: int) -> None:
        """Rewrite a run of keys by one ingestion (sorted pairs, one seq for all)."""
        first = rng.randrange(KEY_COUNT)
        keys = sorted({_key(i) for i in range(first, min(KEY_COUNT, first + rng.randrange(1, 60)))})
        pairs = [(key, self.tag + b"ingested-%d" % step) for key in keys]
        self.engine.ingest(iter(pairs))
        self.model.update(pairs)

    def reopen(self) -> None:
        self.close_snapshots()
        self.engine.close()
        self.engine = open_lsm(self.path, durability="off", background_threads=False, **OPTIONS)

    def close_snapshots(self) -> None:
        for snap, _model in self.snaps:
            snap.close()
        self.snaps = []

    def check(self, rng: random.Random) -> None:
        with self.engine.snapshot() as snap:
            _compare(snap, self.model, rng)
        for snap, model in self.snaps:
            _compare(snap, model, rng)


def _compare(snap, model: dict[bytes, bytes], rng: random.Random) -> None:
    for _ in range(3):
        keys = [_key(rng.randrange(KEY_COUNT + 20)) for _ in range(rng.randrange(1, 60))]
        keys += rng.sample(keys, min(3, len(keys)))  # a key asked twice in one call
        assert snap.get_many(keys) == [model.get(key) for key in keys]


@pytest.mark.parametrize("seed", range(4))
def test_hot_rows_never_answer_a_stale_value(tmp_path, monkeypatch, seed: int) -> None:
    monkeypatch.setattr(multiget, "HOT_ROWS_MAX", 64 if seed % 4 < 2 else multiget.HOT_ROWS_MAX)
    # a read state holding a range deletion does without hot rows: half the runs write none
    ranges = seed % 2 == 0
    engines = [_Engine(str(tmp_path / "a"), b"a", ranges), _Engine(str(tmp_path / "b"), b"b", ranges)]
    hot_seen = 0
    try:
        for step in range(70):
            for db in engines:  # the same step on both (but their values): tables numbered alike
                rng = random.Random(seed * 1000 + step)
                roll = rng.random()
                if roll < 0.45:
                    db.write(rng, step)
                elif roll < 0.52:
                    db.engine.flush()
                elif roll < 0.62:
                    db.engine.compact()  # one version a key where no snapshot needs more: simple blocks
                elif roll < 0.7:
                    db.ingest(rng, step)
                elif roll < 0.8:
                    list(db.engine.scan(b"", None))  # decoded blocks: hot rows come from them
                elif roll < 0.85:
                    db.snaps.append((db.engine.snapshot(), dict(db.model)))
                elif roll < 0.94 and db.snaps:
                    db.snaps.pop(rng.randrange(len(db.snaps)))[0].close()
                elif roll < 0.96:
                    db.reopen()
                db.check(rng)
                hot_seen += bool(multiget.hot_rows_of(db.engine._core.cache))
        assert hot_seen, "no hot row was ever made: the test does not reach them"
    finally:
        for db in engines:
            db.close_snapshots()
            db.engine.close()


def test_more_hot_rows_than_the_bound(tmp_path) -> None:
    """More keys than `HOT_ROWS_MAX` read again and again (the rows dropped all at once when
    full, then made again), a small set of them between every other read, some rewritten
    meanwhile: every answer is the newest value, and the rows kept never pass the bound."""
    count = multiget.HOT_ROWS_MAX + 1500
    engine = open_lsm(str(tmp_path / "db"), durability="off", background_threads=False, cache_size=1 << 26)
    try:
        model = {b"row%06d" % i: b"v%d" % i for i in range(count)}
        engine.write(to_batch([("put", key, value) for key, value in model.items()]))
        engine.flush()
        list(engine.scan(b"", None))  # decoded blocks: their rows can become hot
        keys = sorted(model)
        rng = random.Random(5)
        often = rng.sample(keys, 200)
        for round_ in range(6):
            with engine.snapshot() as snap:
                for start in range(0, count, 700):
                    for chunk in (keys[start:start + 700], often):
                        assert snap.get_many(chunk) == [model[key] for key in chunk]
                    assert len(multiget.hot_rows_of(engine._core.cache)) <= multiget.HOT_ROWS_MAX
            ops = [("put", key, b"new%d-" % round_ + key) for key in rng.sample(often, 50) + rng.sample(keys, 50)]
            engine.write(to_batch(ops))
            apply_ops(model, ops)
            if round_ % 2:
                engine.flush()
                if round_ % 4 == 1:
                    engine.compact()
                list(engine.scan(b"", None))
        assert multiget.hot_rows_of(engine._core.cache)
    finally:
        engine.close()
