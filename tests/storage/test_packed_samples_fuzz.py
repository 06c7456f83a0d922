"""Packed blocks' sampled keys (sstable/packed.py, `PackedBlock.samples`) over index-like keys.

An index block's keys share a long prefix (``/Table/106/2/"sku-0...``), some keys are
prefixes of others, a key's versions run across the sampled entries, and keys straddle the
255/256-byte boundary between msgpack's bin8 and bin16 headers. With the real sampling (every
16th key of a keys section longer than 2 KiB) and with denser or sparser samples, a lookup
(`find`) must answer what the decoded block answers and `first_from` what ``bisect_left``
over the keys gives, for every key, for prefixes of the keys (a short prefix read's start)
and for absent keys between them; `key_at` and `last_key` must give the keys back.
"""

from __future__ import annotations

import random
from bisect import bisect_left

import pytest

from sqlkv.storage.lsm.sstable import packed as packed_module
from sqlkv.storage.lsm.sstable.block import FLAG_MULTI_VERSION, FLAG_TOMBSTONES, NOT_VISIBLE
from sqlkv.storage.lsm.sstable.packed import PackedBlock, decode_packed_block, encode_packed_block

PREFIX = b'/Table/106/2/"sku-0'


def _keys(rng: random.Random) -> list[bytes]:
    """Sorted distinct keys sharing ``PREFIX``: numbered skus, keys extending other keys, a
    run of one repeated byte, and a few past 255 bytes."""
    keys = {PREFIX + b"%06d" % rng.randrange(10**6) + rng.choice([b"", b"\x00\x01", b"\x00\x01\x89"])
            for _ in range(rng.randrange(1, 400))}
    for key in rng.sample(sorted(keys), min(len(keys), 20)):
        keys.add(key + rng.choice([b"\x00", b"a", b"\xff", b"aa"]))  # a key extending another
    if rng.random() < 0.5:
        keys |= {PREFIX + b"x" * n for n in rng.sample(range(200, 300), 8)}  # bin8 and bin16 elements
    return sorted(keys)


def _entries(rng: random.Random, keys: list[bytes]) -> tuple[int, int, list, list, list]:
    """The block's arguments: a few keys with many versions (across a sample), tombstones."""
    out_keys, seqs, values = [], [], []
    for key in keys:
        count = rng.choice([1, 1, 1, 2, 5, 20]) if rng.random() < 0.3 else 1
        for seq in sorted(rng.sample(range(1, 1000), count), reverse=True):
            out_keys.append(key)
            seqs.append(seq)
            values.append(None if rng.random() < 0.05 else b"v%d" % seq)
    flags = (FLAG_MULTI_VERSION if len(out_keys) > len(keys) else 0) | (FLAG_TOMBSTONES if None in values else 0)
    return flags, max(seqs), out_keys, seqs, values


def _probes(rng: random.Random, keys: list[bytes]) -> list[bytes]:
    probes = list(keys) + [b"", PREFIX, PREFIX[:-1], PREFIX + b"\xff", keys[-1] + b"\x00", b"\xff"]
    for key in rng.sample(keys, min(len(keys), 60)):
        probes.append(key[:rng.randrange(len(PREFIX), len(key) + 1)])  # a prefix of a key
        probes.append(key[:-1] + bytes([(key[-1] + 1) % 256]))  # just past (or around) a key
    return probes


@pytest.mark.parametrize("every", [16, 2, 64])
@pytest.mark.parametrize("seed", range(6))
def test_sampled_lookups_over_index_keys(monkeypatch, seed: int, every: int) -> None:
    monkeypatch.setattr(packed_module, "SAMPLE_EVERY", every)
    rng = random.Random(seed * 100 + every)
    keys = _keys(rng)
    flags, max_seq, entry_keys, seqs, values = _entries(rng, keys)
    raw = encode_packed_block(flags, max_seq, entry_keys, seqs, values)
    block = PackedBlock(raw, "t.sst", 0)
    decoded = decode_packed_block(raw, "t.sst", 0)
    long_section = block.keys_end - packed_module.HEADER.size > packed_module.SAMPLED_SECTION
    assert block.samples == (tuple(entry_keys[::every]) if long_section else ())
    assert block.last_key == entry_keys[-1]
    for j in rng.sample(range(len(entry_keys)), min(len(entry_keys), 80)):
        assert block.key_at(j) == entry_keys[j]
    for probe in _probes(rng, keys):
        assert block.first_from(probe) == bisect_left(entry_keys, probe), probe
        for seq in (0, 1, rng.randrange(1, 1000), 999, 1 << 40):
            want = decoded.find(probe, seq)
            got = block.find(probe, seq)
            assert got == want or (got is NOT_VISIBLE and want is NOT_VISIBLE), (probe, seq)
