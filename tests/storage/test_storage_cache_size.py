"""The block cache's default capacity follows the live tables (cache.py `automatic_capacity`):
1.25x their bytes, at least a floor, at most a ceiling and an eighth of the machine's memory;
a ``cache_size`` the user gives stays as given. Resizing down evicts at once."""

from __future__ import annotations

import pytest

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import cache as cache_module
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.cache import BlockCache, automatic_capacity

MIB = 1 << 20


def test_automatic_capacity_is_bounded_both_ways():
    floor, ceiling = cache_module.AUTO_FLOOR, cache_module.AUTO_CEILING
    assert automatic_capacity(0) == floor
    assert automatic_capacity(10 * MIB) == floor  # a small database: what a fixed floor gave
    assert automatic_capacity(100 * MIB) == 125 * MIB
    assert automatic_capacity(10_000 * MIB) == ceiling
    # never more than an eighth of the machine's memory, even below the floor
    assert automatic_capacity(100 * MIB, memory=512 * MIB) == 64 * MIB
    assert automatic_capacity(100 * MIB, memory=256 * MIB) == 32 * MIB
    assert automatic_capacity(100 * MIB, memory=64 << 30) == 125 * MIB
    assert automatic_capacity(100 * MIB, memory=None) == 125 * MIB


def test_resizing_down_evicts_the_least_recently_used():
    cache = BlockCache(10_000)
    for i in range(5):
        cache.put((1, i), f"block {i}", 2_000)
    cache.get((1, 0))  # the most recently used now
    cache.resize(4_000)
    assert list(cache.entries) == [(1, 4), (1, 0)] and cache.used_bytes == 4_000
    cache.resize(0)
    assert not cache.entries and cache.used_bytes == 0


def _table_bytes(engine) -> int:
    core = engine._live()
    return sum(t.size for level in core.version.levels for t in level)


def _ingest(engine, start: int, count: int) -> None:
    engine.ingest([(b"k%08d" % i, b"v" * 200) for i in range(start, start + count)])


@pytest.fixture
def small_bounds(monkeypatch):
    """Floor 64 KiB and ceiling 1 MiB, so a few hundred KB of tables cross both."""
    monkeypatch.setattr(cache_module, "AUTO_FLOOR", 64 << 10)
    monkeypatch.setattr(cache_module, "AUTO_CEILING", 1 << 20)


def test_the_default_capacity_follows_ingestions_compactions_and_reopening(tmp_path, small_bounds):
    path = str(tmp_path)
    engine = open_lsm(path, durability="off", background_processes=False)
    try:
        assert engine.stats()["block_cache"]["capacity"] == 64 << 10
        _ingest(engine, 0, 2_000)  # ~420 KB of tables
        tables = _table_bytes(engine)
        assert 300 << 10 < tables < 800 << 10
        assert engine.stats()["block_cache"]["capacity"] == tables * 5 // 4
        _ingest(engine, 10_000, 8_000)  # past the ceiling
        assert engine.stats()["block_cache"]["capacity"] == 1 << 20
        batch = WriteBatch()
        batch.delete_range(b"k", b"l")
        engine.write(batch)
        engine.compact()  # every table dropped: back to the floor, evicting what it held
        assert _table_bytes(engine) == 0
        stats = engine.stats()["block_cache"]
        assert stats["capacity"] == 64 << 10 and stats["used_bytes"] <= 64 << 10
        _ingest(engine, 0, 2_000)
        tables = _table_bytes(engine)
    finally:
        engine.close()
    engine = open_lsm(path, durability="off", background_processes=False)
    try:  # a reopened database sizes its cache from the MANIFEST's tables
        assert engine.stats()["block_cache"]["capacity"] == tables * 5 // 4
        assert engine.get(b"k%08d" % 1_999) == b"v" * 200
    finally:
        engine.close()


def test_a_given_cache_size_stays_as_given(tmp_path, small_bounds):
    engine = open_lsm(str(tmp_path), durability="off", background_processes=False, cache_size=100_000)
    try:
        _ingest(engine, 0, 8_000)
        assert _table_bytes(engine) > 1 << 20
        stats = engine.stats()["block_cache"]
        assert stats["capacity"] == 100_000 and stats["used_bytes"] <= 100_000
    finally:
        engine.close()


def test_an_ingestion_keeps_all_its_blocks_when_they_fit_the_bound(tmp_path, small_bounds):
    """A bulk load is read right after it: its blocks go into the cache as they are
    written, and the capacity grows ahead of them (up to the ceiling) rather than after
    the install, which would have evicted the first tables' blocks meanwhile."""
    engine = open_lsm(str(tmp_path), durability="off", background_processes=False,
                      target_file_size=64 << 10)
    try:
        pairs = [(b"k%08d" % i, b"v" * 200) for i in range(3_000)]  # ~650 KB in ~10 tables
        engine.ingest(pairs)
        assert len(engine._live().version.levels[-1]) > 5
        before = engine.stats()["block_cache"]
        for key, value in pairs[::7]:
            assert engine.get(key) == value
        after = engine.stats()["block_cache"]
        assert after["misses"] == before["misses"]  # every block came from the cache
        assert after["capacity"] == _table_bytes(engine) * 5 // 4
    finally:
        engine.close()


@pytest.mark.parametrize("cache_size, promoted", [(520 << 10, False), (2 << 20, True)])
def test_key_lists_are_decoded_only_where_every_tables_would_fit_with_them(tmp_path, cache_size, promoted):
    """A block hit again decodes its key list only while the cache could hold every table's
    blocks with their lists: here ~430 KB of tables fit a 520 KiB cache as bytes (every
    read a hit) but not with their lists (~530 KB), which would leave some blocks out."""
    engine = open_lsm(str(tmp_path), durability="off", background_processes=False, cache_size=cache_size)
    try:
        pairs = [(b"k%08d" % i, b"v" * 200) for i in range(2_000)]
        engine.ingest(pairs)
        core = engine._live()
        assert _table_bytes(engine) < cache_size < core.cache.promoted_need or promoted
        for _ in range(2):
            for key, value in pairs[::5]:
                assert engine.get(key) == value
        lists = [blk.key_list is not None for blk in core.cache.entries.values()]
        assert lists and all(lists) if promoted else not any(lists)
        assert engine.stats()["block_cache"]["misses"] == 0
    finally:
        engine.close()
