"""Point reads of many keys at once (lsm/multiget.py, `Snapshot.get_many`): the answer of every
key must be what a `get` of it answers, with the keys over the memtables, L0 and several tables
of each level, several versions per key, point deletions, range deletions or none (without
them a block every version of which the read sees answers by one bisect), and snapshots old
enough to see only some versions."""

from __future__ import annotations

import random

import pytest

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from tests.storage.conftest import SMALL


def _key(i: int) -> bytes:
    return b"k%04d" % i


@pytest.mark.parametrize("ranges", [False, True])
@pytest.mark.parametrize("flush_every", [1, 2])
def test_get_many_answers_each_key_as_get_does(tmp_path, flush_every: int, ranges: bool) -> None:
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    rng = random.Random(flush_every * 2 + ranges)
    snaps = []
    probes = [_key(i) for i in range(-5, 310)] + [b"", b"j", b"k", b"l", b"z"]
    try:
        for round_ in range(8):
            batch = WriteBatch()
            for i in range(300):
                roll = rng.random()
                if roll < 0.3:
                    batch.put(_key(i), b"v%d-%d" % (round_, i))
                elif roll < 0.38:
                    batch.delete(_key(i))
            if ranges and round_ % 3 == 1:
                first = rng.randrange(290)
                batch.delete_range(_key(first), _key(first + rng.randrange(2, 40)))
            engine.write(batch)
            if round_ % flush_every == 0:
                engine.flush()
                if round_ % 4 == 0:
                    engine.compact()
            snaps.append(engine.snapshot())
            for snap in snaps:
                if round_ % 2:  # blocks decoded whole by a scan, as well as kept packed
                    list(snap.scan(b"", None))
                _check(snap, probes, rng)
        state = engine._live().read_state
        assert state.levels and any(len(readers) > 1 for _l, _s, readers in state.levels)
        for snap in snaps:
            snap.close()
        snaps = []
        engine.compact()  # one version a key, tombstones dropped: simple blocks
        with engine.snapshot() as snap:
            _check(snap, probes, rng)
            list(snap.scan(b"", None))
            _check(snap, probes, rng)
    finally:
        for snap in snaps:
            snap.close()
        engine.close()


def _check(snap, probes: list[bytes], rng: random.Random) -> None:
    keys = rng.sample(probes, 60) + probes[:3]  # unsorted, with repeats
    assert snap.get_many(keys) == [snap.get(key) for key in keys]
    assert snap.get_many(probes) == [snap.get(key) for key in probes]


@pytest.mark.parametrize("present_first", [False, True])
def test_get_counts_the_filter_alike_with_its_block_cached_or_not(tmp_path, present_first: bool) -> None:
    """`TableReader.get` asks the bloom filter before reading a block from the disk, but after
    a cached block lacks the key: the figures (useful, positives, false positives) come out as
    with no cache at all, where every get probes the filter first."""
    figures = []
    for cache_size in (0, 1 << 20):
        engine = open_lsm(str(tmp_path / str(cache_size)), durability="off", background_threads=False,
                          cache_size=cache_size, block_size=512)
        try:
            batch = WriteBatch()
            for i in range(0, 3000, 3):
                batch.put(_key(i), b"v%d" % i)
            engine.write(batch)
            engine.flush()
            keys = [_key(i) for i in range(3000)]  # two in three absent, all inside the table's range
            if present_first:
                keys.sort(key=lambda key: int(key[1:]) % 3 != 0)
            for key in keys + keys[::7]:
                assert engine.get(key) == (b"v%d" % int(key[1:]) if int(key[1:]) % 3 == 0 else None)
            stats = engine.stats()
            figures.append((stats["bloom_useful"], stats["bloom_positives"], stats["bloom_false_positives"]))
            assert (stats["block_cache"]["hits"] > 0) == bool(cache_size)
        finally:
            engine.close()
    assert figures[0] == figures[1]
    assert figures[0][0] > 0 and figures[0][2] > 0
