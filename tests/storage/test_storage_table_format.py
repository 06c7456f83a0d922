"""Table format 2 (sstable/packed.py): point reads out of a block's bytes answer what a decoded
block answers; format-1 tables (the builder before it) still read; damage is CorruptionError."""

from __future__ import annotations

import os
import random
import struct
from bisect import bisect_left

import pytest

from sqlkv.errors import CorruptionError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.cache import BlockCache
from sqlkv.storage.lsm.sstable import TableBuilder, TableReader
from sqlkv.storage.lsm.sstable import builder as builder_module
from sqlkv.storage.lsm.sstable import packed as packed_module
from sqlkv.storage.lsm.sstable.block import (
    FLAG_MULTI_VERSION,
    FLAG_TOMBSTONES,
    NOT_VISIBLE,
    decode_data_block,
    encode_data_block,
    seal_parts,
)
from sqlkv.storage.lsm.sstable.packed import (
    HEADER,
    PackedBlock,
    decode_packed_block,
    encode_packed_block,
)


def _entries(rng: random.Random, n: int, key_sizes=(1, 9, 40), value_sizes=(0, 5, 60, 300)):
    """(key, seq, value) in (key ascending, seq descending) order: some keys with several
    versions, some tombstones."""
    keys = sorted({rng.randbytes(rng.choice(key_sizes)) for _ in range(n)})
    out = []
    for key in keys:
        seqs = sorted(rng.sample(range(1, 500), rng.choice([1, 1, 1, 2, 3])), reverse=True)
        for seq in seqs:
            value = None if rng.random() < 0.1 else rng.randbytes(rng.choice(value_sizes))
            out.append((key, seq, value))
    return out


def _block_args(entries):
    keys, seqs, values = (list(x) for x in zip(*entries))
    flags = (FLAG_MULTI_VERSION if len(set(keys)) < len(keys) else 0) | (
        FLAG_TOMBSTONES if None in values else 0)
    return flags, max(seqs), keys, seqs, values


def _probes(rng: random.Random, entries):
    keys = sorted({k for k, _, _ in entries})
    absent = [rng.randbytes(rng.choice([1, 9, 40])) for _ in range(50)]
    # a key that is a slice of the block's bytes but not an element start
    inner = [k[1:] for k in keys if len(k) > 2][:20]
    prefixes = [k[:n] for k in keys[::7] for n in (1, len(k) // 2, len(k) - 1) if n]
    return keys + absent + inner + prefixes + [b"", keys[0] + b"\x00", keys[-1] + b"\xff"]


@pytest.fixture(params=["sampled", "whole"])
def sampling(request, monkeypatch):
    """Every packed block keeps samples of its keys (a lookup searches the window between
    two), or none does (it searches the whole keys section): both must answer alike."""
    monkeypatch.setattr(packed_module, "SAMPLED_SECTION", 0 if request.param == "sampled" else 1 << 30)
    return request.param


@pytest.mark.parametrize("seed", range(6))
def test_packed_block_finds_what_a_decoded_block_finds(seed, sampling):
    rng = random.Random(seed)
    entries = _entries(rng, rng.choice([3, 40, 200]))
    args = _block_args(entries)
    old = decode_data_block(encode_data_block(*args), "t.sst", 0)
    raw = encode_packed_block(*args)
    packed = PackedBlock(raw, "t.sst", 0)
    promoted = PackedBlock(raw, "t.sst", 0)
    assert promoted.promote() > 0
    decoded = decode_packed_block(raw, "t.sst", 0)
    # decoded as tuples (untracked by the garbage collector), both formats alike
    assert all(type(column) is tuple for column in (decoded.keys, decoded.values, old.keys, old.seqs, old.values))
    assert (decoded.keys, tuple(decoded.seqs), decoded.values, decoded.simple_seq) == (
        old.keys, old.seqs, old.values, old.simple_seq)
    old.keys, old.seqs, old.values = list(old.keys), list(old.seqs), list(old.values)
    assert packed.last_key == old.keys[-1]
    # read as a decoded block is read, promoted or not
    for view in (packed, promoted):
        assert (list(view.keys), list(view.seqs), list(view.values)) == (old.keys, old.seqs, old.values)
        seqs, values = view.seqs, view.values  # entry by entry, as a short read takes them
        n = len(old.keys)
        assert (len(seqs), len(values)) == (n, n)
        assert [seqs[j] for j in range(n)] == old.seqs and [values[j] for j in range(n)] == old.values
        assert (seqs[-1], values[-1]) == (old.seqs[-1], old.values[-1])
        assert (list(seqs[1:3]), list(values[1:3])) == (old.seqs[1:3], old.values[1:3])
        with pytest.raises(IndexError):
            values[n]
    for j, key in enumerate(old.keys):
        assert packed.key_at(j) == promoted.key_at(j) == key
    # slices of the keys section itself: matches on the array's header, on an element's
    # header, across two elements -- never taken for a key's start
    section = [raw[HEADER.size + at: HEADER.size + at + size] for at in range(0, 12) for size in (1, 2, 4)]
    for key in _probes(rng, entries) + section:
        # the first entry at or after a key (a short read's start), from the block's bytes
        assert packed.first_from(key) == promoted.first_from(key) == bisect_left(old.keys, key), key
        for seq in (0, 1, 100, 250, 499, 1 << 40):
            expected = old.find(key, seq)
            assert packed.find(key, seq) == expected, (key, seq)
            assert promoted.find(key, seq) == expected, (key, seq)
            assert decoded.find(key, seq) == expected, (key, seq)


@pytest.mark.parametrize("seed", range(40))
def test_first_from_is_bisect_left_over_the_keys(seed, sampling):
    """Keys over a tiny alphabet that holds msgpack's header bytes (0xc4, 0xc5, small
    lengths): a key's bytes often recur inside other keys and across element boundaries."""
    rng = random.Random(seed)
    alphabet = b"\x00\x01\x02\x03\xc4\xc5ab"
    keys = sorted({bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 60))})
    if rng.random() < 0.2:
        keys = sorted(set(keys) | {b"\xc4" * 300, b"\xc4" * 256 + b"a"})  # bin16 headers
    raw = encode_packed_block(0, 7, keys, [7] * len(keys), [b"v"] * len(keys))
    block = PackedBlock(raw, "t.sst", 0)
    probes = {bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(200)}
    probes |= {raw[at: at + size] for at in range(HEADER.size, min(len(raw), 80)) for size in (1, 2, 3)}
    for probe in sorted(probes):
        assert block.first_from(probe) == bisect_left(keys, probe), (keys, probe)


def test_versions_straddling_a_sample_are_found_from_the_newest(sampling):
    """A key's versions that run across a sampled entry: the window starts after the sample
    below the key, so the newest version (before the sample) is the one found."""
    keys, seqs = [], []
    for i in range(60):
        versions = 5 if i in (3, 7, 12) else 1  # keys 3, 7 and 12 straddle entries 16 and 32
        for v in range(versions):
            keys.append(b"key-%04d" % i)
            seqs.append(100 - v)
    values = [b"v%d-%d" % (i, seq) for i, seq in zip(range(len(keys)), seqs)]
    raw = encode_packed_block(FLAG_MULTI_VERSION, 100, keys, seqs, values)
    block = PackedBlock(raw, "t.sst", 0)
    decoded = decode_data_block(encode_data_block(FLAG_MULTI_VERSION, 100, keys, seqs, values), "t.sst", 0)
    assert bool(block.samples) == (sampling == "sampled")
    for key in sorted(set(keys)) + [b"key-", b"key-0003\x00", b"key-9999", b"a", b"z"]:
        assert block.first_from(key) == bisect_left(keys, key), key
        for seq in (95, 96, 97, 98, 99, 100, 1000):
            assert block.find(key, seq) == decoded.find(key, seq), (key, seq)


def test_find_tells_absent_from_only_newer_versions():
    raw = encode_packed_block(FLAG_MULTI_VERSION, 9, [b"a", b"a", b"b"], [9, 5, 7], [b"x", b"y", b"z"])
    block = PackedBlock(raw, "t.sst", 0)
    assert block.find(b"a", 4) is NOT_VISIBLE
    assert block.find(b"a", 6) == (5, b"y")
    assert block.find(b"a", 9) == (9, b"x")
    assert block.find(b"c", 9) is None
    assert block.find(b"b", 6) is NOT_VISIBLE


@pytest.mark.parametrize("value_size", [255, 256, 70000])
def test_long_keys_and_values_and_wide_offsets(value_size):
    keys = [b"k" * 255, b"k" * 256, b"k" * 300 + b"z"]
    values = [b"v" * value_size, None, b"w" * 3]
    raw = encode_packed_block(FLAG_TOMBSTONES, 4, keys, [4, 4, 4], values)
    block = PackedBlock(raw, "t.sst", 0)
    for j, (key, value) in enumerate(zip(keys, values)):
        assert block.find(key, 4) == (4, value)
        assert block.key_at(j) == key
    assert block.find(b"k" * 257, 4) is None
    # bin8 and bin16 headers (2 and 3 bytes): a match must sit right after its element's
    for probe, first in ((b"k", 0), (b"k" * 255, 0), (b"k" * 256, 1), (b"k" * 257, 2), (b"k" * 300, 2),
                         (b"k" * 300 + b"z", 2), (b"k" * 300 + b"zz", 3), (b"j", 0), (b"l", 3)):
        assert block.first_from(probe) == first, len(probe)
    assert decode_packed_block(raw, "t.sst", 0).values == tuple(values)


def _write_table(path: str, entries, format_version: int, block_size: int = 512) -> TableReader:
    builder = TableBuilder(path, 1, block_size, format_version=format_version)
    for key, seq, value in entries:
        builder.add(key, seq, value)
    info = builder.finish()
    return TableReader(path, 1, info.size, BlockCache(1 << 20))


@pytest.mark.parametrize("cache_size", [0, 1 << 20])
def test_a_format_1_table_reads_as_a_format_2_table(tmp_path, cache_size):
    rng = random.Random(3)
    entries = _entries(rng, 600)
    old = _write_table(str(tmp_path / "old.sst"), entries, 1)
    new = _write_table(str(tmp_path / "new.sst"), entries, 2)
    for reader in (old, new):
        reader.cache = BlockCache(cache_size)
        reader.load()
    assert (old.block_count, old.format_version, new.format_version) == (new.block_count, 1, 2)
    for key in _probes(rng, entries):
        for seq in (0, 100, 1 << 40):
            assert new.get(key, seq) == old.get(key, seq), (key, seq)
            assert new.get(key, seq) == old.get(key, seq), (key, seq)  # again: from the cache
    for i in range(new.block_count):  # scans (after point reads cached packed blocks)
        a, b = old.block(i), new.block(i)
        assert (a.keys, a.seqs, a.values, a.simple_seq) == (b.keys, tuple(b.seqs), b.values, b.simple_seq)


FORMAT_1_TABLE = os.path.join(os.path.dirname(__file__), "data", "format1-table.sst")


def _format_1_entries():
    """What data/format1-table.sst holds: written by the format-1 builder (main at 5ffebec,
    `TableBuilder(path, 1, 512)`, these entries in order)."""
    for i in range(600):
        key = b"key%05d" % i
        for seq in ([200 + i, 100 + i] if i % 3 == 0 else [100 + i]):
            yield key, seq, None if (i + seq) % 7 == 0 else b"v%d-%d" % (i, seq) * (i % 5)


@pytest.mark.parametrize("cache_size", [0, 1 << 20])
def test_a_table_written_by_the_format_1_builder_reads(tmp_path, cache_size):
    reader = TableReader(FORMAT_1_TABLE, 1, os.path.getsize(FORMAT_1_TABLE), BlockCache(cache_size))
    reader.load()
    assert reader.format_version == 1
    entries = list(_format_1_entries())
    rewritten = _write_table(str(tmp_path / "new.sst"), entries, 2)
    rewritten.cache = BlockCache(cache_size)
    for key in sorted({k for k, _, _ in entries}) + [b"key", b"key00600", b"key00001x"]:
        for seq in (0, 150, 250, 799, 1 << 40):
            assert reader.get(key, seq) == rewritten.get(key, seq), (key, seq)
    scanned = [entry for i in range(reader.block_count)
               for entry in zip(reader.block(i).keys, reader.block(i).seqs, reader.block(i).values)]
    assert scanned == entries


def _write_rows(engine, rows: dict[bytes, bytes | None]) -> None:
    batch = WriteBatch()
    for key, value in rows.items():
        if value is None:
            batch.delete(key)
        else:
            batch.put(key, value)
    engine.write(batch)


def test_a_database_of_format_1_tables_opens_reads_and_compacts(tmp_path, monkeypatch):
    path = str(tmp_path)
    monkeypatch.setitem(builder_module.TableBuilder.__init__.__kwdefaults__, "format_version", 1)
    engine = open_lsm(path, background_processes=False)
    expected: dict[bytes, bytes | None] = {}
    for round_ in range(3):
        rows = {b"key%05d" % i: b"v%d-%d" % (round_, i) for i in range(round_, 3000, 3)}
        rows.update({b"key%05d" % i: None for i in range(round_ * 7, 3000, 50)})
        _write_rows(engine, rows)
        expected.update(rows)
        engine.flush()
    engine.close()
    monkeypatch.setitem(builder_module.TableBuilder.__init__.__kwdefaults__, "format_version", 2)
    tables = [os.path.join(path, f) for f in os.listdir(path) if f.endswith(".sst")]
    assert tables and all(_format_of(t) == 1 for t in tables)

    engine = open_lsm(path, cache_size=64 * 1024)
    try:
        live = {k: v for k, v in expected.items() if v is not None}
        assert dict(engine.scan(b"", None)) == live
        for key, value in expected.items():
            assert engine.get(key) == value
        assert engine.snapshot().get_many(list(expected)) == list(expected.values())
        engine.compact()
        tables = [os.path.join(path, f) for f in os.listdir(path) if f.endswith(".sst")]
        assert tables and all(_format_of(t) == 2 for t in tables)
        for key, value in expected.items():
            assert engine.get(key) == value
        assert dict(engine.scan(b"", None)) == live
    finally:
        engine.close()


def _format_of(table: str) -> int:
    with open(table, "rb") as f:
        f.seek(-builder_module.FOOTER_SIZE, os.SEEK_END)
        return builder_module.FOOTER.unpack(f.read(builder_module.FOOTER.size))[4]


def test_an_unknown_table_format_is_corruption(tmp_path):
    with pytest.raises(KeyError):
        TableBuilder(str(tmp_path / "t.sst"), 1, format_version=3)


def _resealed(raw: bytes, edit) -> bytes:
    """``raw`` with its payload edited and a valid checksum again (a writer's bug, not a
    disk's: only the structure checks can catch it)."""
    payload = bytearray(raw[:-5])
    edit(payload)
    return seal_parts((bytes(payload),))


def test_inconsistent_packed_blocks_are_corruption():
    raw = encode_packed_block(0, 3, [b"a", b"b"], [3, 3], [b"x", b"y"])
    bad_count = _resealed(raw, lambda p: struct.pack_into("<I", p, 9, 3))
    values_at = HEADER.size + 7  # the keys' array: 0x92, then c4 01 61, c4 01 62
    bad_values = _resealed(raw, lambda p: p.__setitem__(values_at + 1, 0xCC))  # a uint8, not a bin
    bad_key_start = _resealed(raw, lambda p: struct.pack_into("<H", p, len(p) - 10, 0))
    for damaged in (bad_count, bad_key_start, raw[:10]):
        with pytest.raises(CorruptionError, match=r"t\.sst.*offset 4096"):
            PackedBlock(damaged, "t.sst", 4096)
    with pytest.raises(CorruptionError, match=r"t\.sst.*offset 4096"):
        decode_packed_block(bad_count, "t.sst", 4096)
    with pytest.raises(CorruptionError, match=r"t\.sst.*offset 4096"):
        decode_packed_block(bad_values, "t.sst", 4096)
    with pytest.raises(CorruptionError, match=r"t\.sst.*offset 4096"):
        PackedBlock(bad_values, "t.sst", 4096).find(b"a", 3)


@pytest.mark.parametrize("where", ["keys", "offsets", "trailer"])
def test_a_flipped_byte_in_a_packed_block_is_reported_by_gets(tmp_path, where):
    entries = [(b"key%04d" % i, 5, b"value%d" % i) for i in range(400)]
    table = str(tmp_path / "000007.sst")
    reader = _write_table(table, entries, 2)
    reader.load()
    size = reader.index_sizes[1]
    at = {"keys": HEADER.size + 3, "offsets": size - 12, "trailer": size - 2}[where]
    reader.close()
    with open(table, "r+b") as f:
        f.seek(reader.index_offsets[1] + at)
        byte = f.read(1)
        f.seek(reader.index_offsets[1] + at)
        f.write(bytes([byte[0] ^ 0x5A]))
    reader = TableReader(table, 7, os.path.getsize(table), BlockCache(1 << 20))
    reader.load()  # the index and bloom are intact
    victim = reader.index_keys[1]
    message = rf"000007\.sst.*offset {reader.index_offsets[1]}"
    with pytest.raises(CorruptionError, match=message):
        reader.get(victim, 9)
    with pytest.raises(CorruptionError, match=message):
        reader.block(1)


def test_the_cache_charges_what_it_swaps_and_grows():
    cache = BlockCache(10_000)
    cache.put((1, 0), "packed", 1_000)
    cache.put((1, 1), "other", 2_000)
    cache.grow((1, 0), 500)
    assert cache.used_bytes == 3_500
    cache.replace((1, 0), "decoded", 4_000)
    assert cache.used_bytes == 6_000 and cache.entries[(1, 0)] == "decoded"
    cache.grow((1, 0), 5_000)  # over capacity: the least recently used goes
    assert (1, 1) not in cache.entries and cache.used_bytes == 9_000
    cache.grow((1, 1), 100)  # an evicted entry is not charged
    assert cache.used_bytes == 9_000


@pytest.mark.parametrize("room", [True, False])
def test_a_block_hit_again_decodes_its_keys_only_where_the_cache_has_room(tmp_path, room):
    """A packed block's key list doubles what the cache charges it: added on a second hit
    while the cache has room for it, never by evicting other blocks (a database larger than
    the cache keeps twice as many blocks as bytes); reads answer the same either way."""
    entries = [(b"key%04d" % i, 5, b"value%d" % i) for i in range(400)]
    reader = _write_table(str(tmp_path / "000003.sst"), entries, 2, block_size=2048)
    reader.load()
    first = reader.lookup_block(0)
    assert first.__class__ is PackedBlock and first.key_list is None  # a miss: bytes only
    held = reader.cache.used_bytes
    reader.cache.capacity = held + (first.promotion_bytes if room else first.promotion_bytes - 1)
    again = reader.lookup_block(0)
    assert again is first
    assert (again.key_list is not None) is room
    assert reader.cache.used_bytes == held + (first.promotion_bytes if room else 0)
    assert list(reader.cache.entries) == [(reader.number, reader.index_offsets[0])]  # nothing evicted
    for key, seq, value in entries:
        assert reader.get(key, 9) == (seq, value)


def test_an_ingestion_leaves_its_blocks_in_the_cache(tmp_path):
    engine = open_lsm(str(tmp_path))
    try:
        pairs = [(b"k%06d" % i, b"v%d" % i * 3) for i in range(20000)]
        engine.ingest(pairs)
        before = engine.stats()["block_cache"]
        assert before["used_bytes"] > 0
        for key, value in pairs[::37]:
            assert engine.get(key) == value
        assert engine.get(b"k0000005x") is None
        after = engine.stats()["block_cache"]
        assert after["misses"] == before["misses"]  # no data block came from the disk
        assert after["hits"] > before["hits"]
        assert dict(engine.scan(b"", None)) == dict(pairs)  # scans decode the cached bytes
    finally:
        engine.close()


def test_a_failed_ingestion_leaves_nothing_in_the_cache(tmp_path):
    engine = open_lsm(str(tmp_path), target_file_size=64 * 1024)

    def pairs():
        for i in range(20000):
            yield b"k%06d" % i, b"v" * 20
        raise RuntimeError("the source failed")

    try:
        with pytest.raises(RuntimeError, match="the source failed"):
            engine.ingest(pairs())
        assert engine.stats()["block_cache"]["used_bytes"] == 0
        assert list(engine.scan(b"", None)) == []
    finally:
        engine.close()


def _filled(path: str, rows: int = 20000) -> dict[bytes, bytes]:
    engine = open_lsm(path)
    data = {b"k%06d" % i: b"value-%d" % i * 4 for i in range(rows)}
    _write_rows(engine, data)
    engine.flush()
    engine.close()
    return data


def test_a_scan_larger_than_the_cache_keeps_the_point_reads_blocks(tmp_path):
    data = _filled(str(tmp_path))
    engine = open_lsm(str(tmp_path), cache_size=256 * 1024)
    try:
        hot = list(data)[5000:5400]
        for key in hot:
            assert engine.get(key) == data[key]
        assert dict(engine.scan(b"", None)) == data  # far more than 256 KiB decoded
        before = engine.stats()["block_cache"]
        for key in hot:
            assert engine.get(key) == data[key]
        after = engine.stats()["block_cache"]
        assert after["used_bytes"] <= 256 * 1024
        assert after["misses"] == before["misses"]  # the gets' blocks stayed cached
    finally:
        engine.close()


def test_a_scan_caches_decoded_blocks_where_there_is_room(tmp_path):
    data = _filled(str(tmp_path))
    engine = open_lsm(str(tmp_path), cache_size=64 << 20)
    try:
        assert dict(engine.scan(b"", None)) == data
        first = engine.stats()["block_cache"]
        assert first["misses"] > 0 and first["used_bytes"] > 0
        assert dict(engine.scan(b"", None)) == data
        second = engine.stats()["block_cache"]
        assert second["misses"] == first["misses"]  # all from the cache the second time
    finally:
        engine.close()


@pytest.mark.parametrize("versions", [1, 3])
def test_short_prefix_reads_take_entries_out_of_packed_blocks(tmp_path, versions):
    """`read_prefix` on tables only point-read so far: the blocks stay packed in the cache
    (key list decoded, seqs and values read entry by entry) and answer as the scan does."""
    engine = open_lsm(str(tmp_path), background_processes=False)
    data: dict[bytes, bytes | None] = {}
    for round_ in range(versions):
        rows = {b"g%03d/%04d" % (i % 97, i): b"v%d-%d" % (round_, i) * (i % 4) for i in range(3000)}
        rows.update({b"g%03d/%04d" % (i % 97, i): None for i in range(round_, 3000, 11)})
        _write_rows(engine, rows)
        data.update(rows)
        engine.flush()
    engine.close()
    engine = open_lsm(str(tmp_path))
    try:
        snap = engine.snapshot()
        for group in range(0, 97, 5):
            start, end = b"g%03d/" % group, b"g%03d0" % group
            want = sorted((k, v) for k, v in data.items() if start <= k < end and v is not None)
            assert snap.read_prefix(start, end, 1000) == want
        kinds = {type(blk).__name__ for blk in engine._core.cache.entries.values()}
        assert "PackedBlock" in kinds and "DataBlock" not in kinds
        assert dict(engine.scan(b"", None)) == {k: v for k, v in data.items() if v is not None}
    finally:
        engine.close()
