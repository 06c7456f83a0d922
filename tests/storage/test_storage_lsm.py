"""LSM-specific behaviour: lazy opening, big batches, range tombstones, pinning, stats."""

from __future__ import annotations

import glob
import os
import random
import time

import pytest

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.sstable.bloom import BloomFilter, build_filter, key_hash
from tests.storage.conftest import SMALL


def _load(engine, n: int, prefix: bytes = b"k", value: bytes = b"v" * 50, per_batch: int = 500) -> None:
    for start in range(0, n, per_batch):
        batch = WriteBatch()
        for i in range(start, min(n, start + per_batch)):
            batch.put(prefix + b"%06d" % i, value)
        engine.write(batch)


def test_reopen_reads_no_table_data(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    _load(engine, 3000)
    engine.compact()
    tables = len(glob.glob(os.path.join(str(tmp_path), "*.sst")))
    engine.close()
    assert tables > 3
    engine = open_lsm(str(tmp_path), **SMALL)
    try:
        core = engine._core
        assert not any(r._loaded for r in core.readers.values())  # no footer/index/bloom read yet
        assert engine.stats()["block_cache"]["misses"] == 0
        assert engine.get(b"k001234") == b"v" * 50
        assert sum(r._loaded for r in core.readers.values()) == 1  # only the table holding the key
    finally:
        engine.close()


def test_large_batch_is_atomic_and_replayed(tmp_path):
    engine = open_lsm(str(tmp_path), durability="full")
    batch = WriteBatch()
    for i in range(150_000):
        batch.put(b"big%07d" % i, b"x" * 100)
    seq = engine.write(batch)
    assert seq == 150_000
    engine.close()
    engine = open_lsm(str(tmp_path))
    try:
        assert engine.last_seq == 150_000
        assert engine.get(b"big0149999") == b"x" * 100
        assert sum(1 for _ in engine.scan(b"big", b"bih")) == 150_000
    finally:
        engine.close()


def test_ops_of_one_batch_apply_in_order(tmp_path):
    engine = open_lsm(str(tmp_path))
    try:
        _load(engine, 10)
        batch = WriteBatch()
        batch.put(b"k000003", b"before")
        batch.delete_range(b"k000000", b"k000005")
        batch.put(b"k000002", b"after")
        batch.delete(b"k000007")
        batch.put(b"k000007", b"again")
        engine.write(batch)
        expected = [(b"k000002", b"after")] + [(b"k%06d" % i, b"v" * 50) for i in (5, 6)] \
            + [(b"k000007", b"again")] + [(b"k%06d" % i, b"v" * 50) for i in (8, 9)]
        assert list(engine.scan(b"k", None)) == expected
        engine.flush()
        engine.compact()
        assert list(engine.scan(b"k", None)) == expected
    finally:
        engine.close()


def test_drop_table_range_tombstone_frees_files(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 3000, prefix=b"t1/")
        _load(engine, 50, prefix=b"t2/")
        engine.compact()
        before = engine.stats()
        batch = WriteBatch()
        batch.delete_range(b"t1/", b"t1/\xff")  # DROP TABLE: one record, whatever the size
        engine.write(batch)
        assert list(engine.scan(b"t1/", b"t10")) == []
        engine.flush()  # the tombstone reaches the version; the compaction thread takes it from there
        deadline = time.monotonic() + 60
        while engine.stats()["range_tombstones"] and time.monotonic() < deadline:
            time.sleep(0.05)
        after = engine.stats()
        assert after["total_bytes"] < before["total_bytes"] / 10
        assert after["files_dropped_by_range_tombstone"] > 0
        assert after["range_tombstones"] == 0  # retired once nothing is left under it
        assert list(engine.scan(b"t1/", b"t10")) == []
        assert len(list(engine.scan(b"t2/", b"t20"))) == 50
        live = {r.number for r in engine._core.readers.values()}
        on_disk = {int(os.path.basename(p)[:6]) for p in glob.glob(os.path.join(str(tmp_path), "*.sst"))}
        assert on_disk == live
    finally:
        engine.close()


def test_snapshot_survives_overwrites_and_compaction(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 1000, value=b"old")
        snap = engine.snapshot()
        _load(engine, 1000, value=b"new")
        batch = WriteBatch()
        batch.delete_range(b"k000100", b"k000200")
        engine.write(batch)
        engine.compact()
        assert snap.get(b"k000150") == b"old"
        assert {v for _, v in snap.scan(b"k", None)} == {b"old"}
        assert sum(1 for _ in snap.scan(b"k", None, reverse=True)) == 1000
        assert engine.get(b"k000150") is None
        snap.close()
        engine.compact()
        assert sum(1 for _ in engine.scan(b"k", None)) == 900
        assert engine.stats()["open_snapshots"] == 0
    finally:
        engine.close()


def test_open_scan_pins_its_files(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 2000, value=b"a" * 20)
        engine.compact()
        scan = engine.scan(b"k", None)  # taken before the overwrite: must see the old values
        first = next(scan)
        _load(engine, 2000, value=b"b" * 20)
        engine.compact()
        rest = list(scan)
        assert [first, *rest] == [(b"k%06d" % i, b"a" * 20) for i in range(2000)]
        del scan, rest
        tables = {int(os.path.basename(p)[:6]) for p in glob.glob(os.path.join(str(tmp_path), "*.sst"))}
        assert tables == engine._core.version.file_numbers()  # the pinned files went once released
    finally:
        engine.close()


def test_unstarted_scan_reads_state_of_its_call(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 500, value=b"one")
        scan = engine.scan(b"k", None, reverse=True, limit=3)
        _load(engine, 500, value=b"two")
        engine.compact()
        assert list(scan) == [(b"k%06d" % i, b"one") for i in (499, 498, 497)]
    finally:
        engine.close()


def test_wal_segments_are_deleted_after_flush(tmp_path):
    engine = open_lsm(str(tmp_path), durability="normal", memtable_size=8192)
    try:
        _load(engine, 3000)
        engine.flush()
        logs = glob.glob(os.path.join(str(tmp_path), "*.log"))
        assert len(logs) == 1  # only the active segment
    finally:
        engine.close()


def test_scan_after_mass_point_deletes(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 3000)
        for start in range(0, 3000, 500):
            batch = WriteBatch()
            for i in range(start, start + 500):
                if i != 2999:
                    batch.delete(b"k%06d" % i)
            engine.write(batch)
        assert list(engine.scan(b"k", None)) == [(b"k002999", b"v" * 50)]
        engine.compact()
        stats = engine.stats()
        assert stats["point_tombstones"] == 0  # bottom-level compaction dropped them
        assert sum(level["entries"] for level in stats["levels"]) == 1
    finally:
        engine.close()


def test_bloom_filter_has_no_false_negatives():
    keys = [b"key%06d" % i for i in range(5000)]
    bloom = BloomFilter(build_filter([key_hash(k) for k in keys]))
    assert all(bloom.may_contain(k) for k in keys)
    false_positives = sum(bloom.may_contain(b"other%06d" % i) for i in range(5000))
    assert false_positives < 5000 * 0.03


def _filter_by_the_documented_loop(hashes: list[int], nbits: int) -> bytes:
    """storage.md's "Bloom block" algorithm, one key and one probe at a time (the oracle of
    the all-keys-at-once `build_filter`)."""
    bits = bytearray(nbits // 8)
    for h in hashes:
        delta = ((h >> 17) | (h << 15)) & 0xFFFFFFFF
        for _ in range(6):
            pos = h % nbits
            bits[pos >> 3] |= 1 << (pos & 7)
            h = (h + delta) & 0xFFFFFFFF
    return bytes([6]) + bytes(bits)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 100, 6553, 6554, 20_000])
def test_bloom_filter_sets_the_documented_bits(n):
    rng = random.Random(n)
    hashes = [key_hash(rng.randbytes(rng.randint(1, 30))) for _ in range(n)] + [0, 0xFFFFFFFF][:n]
    data = build_filter(hashes)
    nbits = (len(data) - 1) * 8
    assert nbits & (nbits - 1) == 0 and nbits >= max(64, 10 * len(hashes)) and (nbits <= 64 or nbits < 20 * len(hashes))
    assert data == _filter_by_the_documented_loop(hashes, nbits)


def test_stats_report_amplification(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 2000)
        engine.flush()
        for i in range(0, 2000, 7):
            engine.get(b"k%06d" % i)
            engine.get(b"k%06d" % i)  # its block again: a cache hit (not left to bloom false positives)
            engine.get(b"k%06dx" % i)  # inside the tables' key ranges
        stats = engine.stats()
        for key in ("levels", "space_amplification", "write_amplification", "read_amplification",
                    "bloom_negatives", "block_cache", "pending_compaction_bytes", "point_tombstones",
                    "range_tombstones", "memtable_bytes", "last_seq"):
            assert key in stats
        assert stats["write_amplification"] >= 1
        assert stats["bloom_negatives"] > 0
        assert stats["block_cache"]["hits"] > 0
        assert stats["last_seq"] == 2000
    finally:
        engine.close()


def test_picker_pushes_down_tables_of_tombstones():
    from sqlkv.storage.lsm.compaction import CompactionOptions, pick_compaction
    from sqlkv.storage.lsm.manifest import NUM_LEVELS, Version
    from sqlkv.storage.lsm.sstable.builder import TableInfo

    def table(number, lo, hi, entries, tombstones):
        return TableInfo(number, 1000, lo, hi, 1, 10, entries, tombstones)

    levels = [[] for _ in range(NUM_LEVELS)]
    levels[1] = [table(1, b"a", b"m", 100, 90)]
    levels[2] = [table(2, b"a", b"f", 100, 0), table(3, b"x", b"z", 100, 0)]
    version = Version(levels, [], {})
    opts = CompactionOptions()
    job = pick_compaction(version, opts, 10, {})
    assert (job.reason, job.level, job.output_level) == ("dense-tombstones", 1, 2)
    assert [t.number for t in job.next_inputs] == [2]
    assert job.bottom  # nothing below L2: the merge may drop the tombstones
    assert pick_compaction(version, opts, 10, {}, snapshots_open=True) is None  # a snapshot may need them
    levels[2] = [table(3, b"x", b"z", 100, 0)]
    job = pick_compaction(Version(levels, [], {}), opts, 10, {})
    assert (job.reason, job.level, job.output_level, job.bottom) == ("tombstone-clean", 1, 1, True)


def test_scan_jumps_over_range_deleted_tables(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 4000)
        engine.compact()
        snap = engine.snapshot()  # holds the deleted data (and so the files) in place
        batch = WriteBatch()
        batch.delete_range(b"k000000", b"k003900")
        engine.write(batch)
        engine.flush()
        total_blocks = sum(r.block_count for r in engine._core.readers.values())
        cache = engine._core.cache
        before = cache.hits + cache.misses
        got = list(engine.scan(b"k", None, limit=5))
        got_reverse = list(engine.scan(b"k", b"k003905", reverse=True))
        touched = cache.hits + cache.misses - before
        assert got == [(b"k%06d" % i, b"v" * 50) for i in range(3900, 3905)]
        assert got_reverse == got[::-1]
        assert touched < total_blocks / 10  # the deleted stretch was skipped, not walked
        assert sum(1 for _ in snap.scan(b"k", None)) == 4000
        snap.close()
    finally:
        engine.close()


def test_jump_over_deleted_stretch_stops_at_newer_table(tmp_path):
    """Found by the model test: a level's next table may hold a newer key inside the stretch."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _load(engine, 147, prefix=b"a")
        snap = engine.snapshot()  # keeps the a-keys in the output tables, under the tombstone
        batch = WriteBatch()
        batch.delete_range(b"a\x00", b"ba")
        engine.write(batch)
        batch = WriteBatch()
        batch.put(b"b0000", b"new")  # inside the deleted range, but newer
        engine.write(batch)
        engine.compact()
        assert list(engine.scan(b"", None)) == [(b"b0000", b"new")]
        assert list(engine.scan(b"", None, reverse=True)) == [(b"b0000", b"new")]
        assert len(list(snap.scan(b"", None))) == 147
        snap.close()
    finally:
        engine.close()


def test_short_scans_match_model_across_sources(tmp_path):
    """Short prefix scans (the index-lookup pattern) open cursors only on sources that can
    hold the span; with data spread over memtable, L0 and deeper levels, results still match
    a dict, at the latest state and at an older snapshot, with and without range tombstones."""
    import random

    from sqlkv.storage.kv import prefix_end
    from tests.storage.conftest import model_scan

    rng = random.Random(11)
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    model: dict = {}
    try:
        def write_round(n: int, tag: bytes) -> None:
            batch = WriteBatch()
            for _ in range(n):
                key = b"p%03d/%02d" % (rng.randrange(300), rng.randrange(12))
                if rng.random() < 0.15:
                    batch.delete(key)
                    model.pop(key, None)
                else:
                    batch.put(key, tag + key)
                    model[key] = tag + key
            engine.write(batch)

        for r in range(12):
            write_round(150, b"r%d-" % r)
            if r % 3 == 0:
                engine.flush()
        frozen = dict(model)
        snap = engine.snapshot()
        write_round(100, b"late-")
        batch = WriteBatch()
        batch.delete_range(b"p100", b"p120")
        engine.write(batch)
        for k in [k for k in model if b"p100" <= k < b"p120"]:
            del model[k]
        write_round(20, b"last-")
        assert any(level["files"] for level in engine.stats()["levels"])  # tables exist besides the memtable

        def check(reader, expected: dict) -> None:
            for _ in range(300):
                prefix = b"p%03d" % rng.randrange(310) + (b"/%02d" % rng.randrange(12) if rng.random() < 0.5 else b"")
                reverse, limit = rng.random() < 0.3, rng.choice([1, 3, 10, None])
                got = list(reader.scan(prefix, prefix_end(prefix), reverse=reverse, limit=limit))
                assert got == model_scan(expected, prefix, prefix_end(prefix), reverse, limit), prefix

        check(engine, model)
        check(snap, frozen)
        snap.close()
    finally:
        engine.close()


def test_finish_background_work_pays_the_compaction_debt(tmp_path):
    # No background threads: whatever is owed stays owed until someone pays it.
    engine = open_lsm(str(tmp_path), durability="off", background_threads=0, **SMALL)
    try:
        model = {}
        for round_ in range(4):
            batch = WriteBatch()
            for i in range(0, 3000, 1 + round_):
                key, value = b"k%06d" % i, b"v%d" % round_
                batch.put(key, value)
                model[key] = value
            engine.write(batch)
            engine.flush()
        assert engine.stats()["pending_compaction_bytes"] > 0
        engine.finish_background_work()
        assert engine.stats()["pending_compaction_bytes"] == 0
        assert dict(engine.scan(b"", None)) == model
    finally:
        engine.close()
