"""The block cache's ``cache_size`` bounds the memory it really holds (decoded blocks cost far
more than their bytes on disk: it once held about 3.4x its configured size)."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm


def _build(path: str, value_size: int, rows: int = 20000) -> None:
    engine = open_lsm(path)
    for start in range(0, rows, 1000):
        batch = WriteBatch()
        for i in range(start, start + 1000):
            batch.put(b"/t/1/%08d" % i, b"v" * value_size)
        engine.write(batch)
    engine.flush()
    engine.close()


def _cached_memory(path: str, cache_size: int, rows: int = 20000, scan: bool = True,
                   stride: int = 7) -> tuple[int, int]:
    """(memory traced while reading through the cache, bytes the cache charged): a scan of
    everything (blocks decoded whole) unless ``scan`` is False, then a get of every
    ``stride``-th key (point reads keep a block's bytes, and decode its keys once hit again)."""
    engine = open_lsm(path, cache_size=cache_size)
    try:
        state = engine._core.read_state  # open every table reader before measuring
        for _, _, reader in state.l0:
            reader.load()
        for _, _, readers in state.levels:
            for reader in readers:
                reader.load()
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            if scan:
                assert sum(1 for _ in engine.scan(b"", None)) == rows
            for i in range(0, rows, stride):
                assert engine.get(b"/t/1/%08d" % i) is not None
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        return held, engine.stats()["block_cache"]["used_bytes"]
    finally:
        engine.close()


@pytest.mark.parametrize("value_size", [5, 40, 300])
def test_the_charge_matches_real_memory(tmp_path, value_size):
    _build(str(tmp_path), value_size)
    held, charged = _cached_memory(str(tmp_path), cache_size=1 << 30)
    assert 0.7 * charged <= held <= 1.1 * charged, (held, charged)


def test_a_small_cache_holds_about_its_size(tmp_path):
    _build(str(tmp_path), 5)
    held, charged = _cached_memory(str(tmp_path), cache_size=256 * 1024)
    assert charged <= 256 * 1024
    assert held <= 1.2 * 256 * 1024, held


@pytest.mark.parametrize("value_size", [5, 40, 300])
@pytest.mark.parametrize("stride", [7, 997])
def test_the_charge_of_point_reads_matches_real_memory(tmp_path, value_size, stride):
    """Blocks read by gets alone: kept as bytes (stride 997: about one get a block) or with
    their key list decoded (stride 7: each block hit again)."""
    _build(str(tmp_path), value_size)
    held, charged = _cached_memory(str(tmp_path), cache_size=1 << 30, scan=False, stride=stride)
    assert 0.7 * charged <= held <= 1.1 * charged, (held, charged)
