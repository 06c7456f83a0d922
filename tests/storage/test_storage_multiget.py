"""Point reads of many keys at once (lsm/multiget.py, `Snapshot.get_many`): the answer of every
key must be what a `get` of it answers, with the keys over the memtables, L0 and several tables
of each level, several versions per key, point deletions, range deletions or none (without
them a block every version of which the read sees answers by one bisect), and snapshots old
enough to see only some versions."""

from __future__ import annotations

import bisect
import random

import pytest

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import multiget, open_lsm
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


def _filled(path, values: bytes, cache_size: int = 1 << 22):
    engine = open_lsm(str(path), durability="off", background_threads=False, cache_size=cache_size, block_size=512)
    batch = WriteBatch()
    for i in range(3000):
        batch.put(_key(i), values + b"%d" % i)
    engine.write(batch)
    engine.flush()
    return engine


def _only_reader(engine):
    state = engine._core.read_state
    return next(r for r in [t[2] for t in state.l0] + [r for _l, _s, rs in state.levels for r in rs])


def test_get_many_counts_and_touches_cached_blocks_as_cached_block_does(tmp_path) -> None:
    """A block is looked up in the block cache by `get_many` itself: each block its keys fall
    in is one hit and becomes the most recently used, packed or decoded alike; a key found
    again in a decoded block is a hot row, counted as one hit too."""
    engine = _filled(tmp_path / "db", b"v")
    try:
        cache = engine._core.cache
        reader = _only_reader(engine)
        keys = [_key(i) for i in range(5, 3000, 97)]
        want = [b"v%d" % int(key[1:]) for key in keys]
        with engine.snapshot() as snap:
            assert snap.get_many(keys) == want  # the blocks read and cached (packed)
        blocks = {bisect.bisect_left(reader.index_keys, key) for key in keys}
        assert len(blocks) > 20
        for decoded in (False, True):
            if decoded:  # a scan leaves the blocks decoded in the cache
                assert len(list(engine.scan(b"", None))) == 3000
            with engine.snapshot() as snap:
                before = (cache.hits, cache.misses)
                assert snap.get_many(keys) == want
                assert (cache.hits - before[0], cache.misses - before[1]) == (len(blocks), 0)
                last = (reader.number, reader.index_offsets[max(blocks)])
                assert next(reversed(cache.entries)) == last
                assert (snap.get_many(keys[::-1]) == want[::-1]) and cache.hits - before[0] == 2 * len(keys)
            assert {type(cache.entries[(reader.number, reader.index_offsets[b])]).__name__ for b in blocks} \
                == ({"DataBlock"} if decoded else {"PackedBlock"})
    finally:
        engine.close()


def test_hot_rows_are_per_engine_bounded_and_follow_new_tables(tmp_path, monkeypatch) -> None:
    """Two engines holding the same keys in tables of the same numbers answer their own values
    from their hot rows; the rows kept stay within `HOT_ROWS_MAX`; a key rewritten into a new
    table (flush and compaction) answers its new value."""
    monkeypatch.setattr(multiget, "HOT_ROWS_MAX", 16)
    engines = [_filled(tmp_path / "a", b"a"), _filled(tmp_path / "b", b"b")]
    try:
        assert _only_reader(engines[0]).number == _only_reader(engines[1]).number
        keys = [_key(i) for i in range(0, 3000, 41)]
        for engine in engines:
            list(engine.scan(b"", None))  # decoded blocks: their keys become hot rows
        for _ in range(2):
            for engine, head in zip(engines, (b"a", b"b")):
                with engine.snapshot() as snap:
                    assert snap.get_many(keys[:10]) == [head + key[1:].lstrip(b"0").rjust(1, b"0") for key in keys[:10]]
                    assert snap.get_many(keys) == [snap.get(key) for key in keys]
                assert 0 < len(multiget.hot_rows_of(engine._core.cache)) <= 16
        engine = engines[0]
        old = engine.snapshot()
        batch = WriteBatch()
        for key in keys[:10]:
            batch.put(key, b"new")
        engine.write(batch)
        engine.flush()
        engine.compact()
        list(engine.scan(b"", None))
        with engine.snapshot() as snap:
            for _ in range(2):
                assert snap.get_many(keys[:10]) == [b"new"] * 10
        assert old.get_many(keys[:10]) == [b"a" + key[1:].lstrip(b"0").rjust(1, b"0") for key in keys[:10]]
        old.close()
    finally:
        for engine in engines:
            engine.close()


def test_hot_rows_keep_only_short_values(tmp_path) -> None:
    """Hot rows keep their values alive after the block leaves the cache, so only values up to
    `HOT_ROW_MAX_BYTES` are remembered: a long value is answered from its block every time."""
    engine = open_lsm(str(tmp_path / "db"), durability="off", background_threads=False, block_size=512)
    try:
        long_value = b"x" * (multiget.HOT_ROW_MAX_BYTES + 1)
        batch = WriteBatch()
        for i in range(40):
            batch.put(_key(i), long_value if i % 2 else b"short%d" % i)
        engine.write(batch)
        engine.flush()
        list(engine.scan(b"", None))  # decoded blocks, as the hot rows need
        keys = [_key(i) for i in range(40)]
        with engine.snapshot() as snap:
            for _ in range(2):
                assert snap.get_many(keys) == [long_value if i % 2 else b"short%d" % i for i in range(40)]
        hot = multiget.hot_rows_of(engine._core.cache)
        assert {key for key in keys if key in hot} == {_key(i) for i in range(0, 40, 2)}
    finally:
        engine.close()
