"""`TableBuilder.add_puts` (an ingestion's chunks) writes the file `add` writes entry by entry."""

from __future__ import annotations

import random

import pytest

from sqlkv.storage.lsm.sstable.builder import TableBuilder


def _pairs(rng: random.Random, n: int) -> list[tuple[bytes, bytes]]:
    keys = sorted({rng.randbytes(rng.randrange(1, 40)) for _ in range(n)})
    return [(k, rng.randbytes(rng.choice([0, 1, 5, 60, 700, 3000]))) for k in keys]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("block_size", [64, 512, 4096])
def test_add_puts_cuts_blocks_as_add_does(tmp_path, seed, block_size):
    rng = random.Random(seed)
    pairs = _pairs(rng, 900)
    one = TableBuilder(str(tmp_path / "one.sst"), 1, block_size)
    for key, value in pairs:
        one.add(key, 7, value)
    info_one = one.finish(7)
    chunked = TableBuilder(str(tmp_path / "chunked.sst"), 1, block_size)
    at = 0
    while at < len(pairs):  # chunks of uneven sizes, as an ingestion's last chunk is
        size = rng.randrange(1, 200)
        keys, values = zip(*pairs[at:at + size])
        assert chunked.add_puts(keys, values, 7, 1 << 40) == len(keys)
        at += size
    info_chunked = chunked.finish(7)
    assert (tmp_path / "one.sst").read_bytes() == (tmp_path / "chunked.sst").read_bytes()
    assert info_one == info_chunked


def test_add_puts_stops_at_a_block_boundary_past_the_size(tmp_path):
    pairs = _pairs(random.Random(9), 500)
    keys, values = zip(*pairs)
    builder = TableBuilder(str(tmp_path / "t.sst"), 1, 512)
    taken = builder.add_puts(keys, values, 3, 4096)
    assert 0 < taken < len(keys)
    assert builder.estimated_size >= 4096
    info = builder.finish(3)
    assert (info.smallest, info.largest, info.entries) == (keys[0], keys[taken - 1], taken)
