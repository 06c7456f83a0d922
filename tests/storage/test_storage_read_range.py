"""`read_range` (a batched scan's read) from a single source hands out whole chunks at once
(`iterators.merged_chunks`): its pairs must equal the lazy scan's for every limit, across
block and table boundaries, for simple chunks (every version visible) and for chunks an
older snapshot sees only part of."""

from __future__ import annotations

import pytest

from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from tests.storage.conftest import SMALL


def _write(engine, keys: range, tag: bytes) -> None:
    batch = WriteBatch()
    for i in keys:
        batch.put(b"k%05d" % i, tag + b"%05d" % i)
    engine.write(batch)


@pytest.mark.parametrize("flushed", [False, True])
def test_read_range_equals_the_lazy_scan_for_every_limit(tmp_path, flushed: bool) -> None:
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _write(engine, range(0, 600), b"old")
        if flushed:
            engine.flush()
            engine.compact()  # one bottom level of several tables, many 256-byte blocks
        old = engine.snapshot()
        _write(engine, range(0, 600, 3), b"new")  # versions an older snapshot must not see
        if flushed:
            engine.flush()
            engine.compact()
        latest = engine.snapshot()
        try:
            for snap, tag in ((old, b"old"), (latest, None)):
                for start, end in ((b"k", None), (b"k00017", b"k00455"), (b"k00599", b"k1")):
                    for reverse in (False, True):
                        whole = list(snap.scan(start, end, reverse=reverse))
                        assert whole, (start, end)
                        if tag is not None:
                            assert {v[:3] for _k, v in whole} == {tag}
                        for limit in (None, 1, 2, 7, 16, 63, 64, 65, 256, 1000):
                            got = snap.read_range(start, end, reverse, limit)
                            assert got == whole[:limit], (start, end, reverse, limit)
        finally:
            old.close()
            latest.close()
    finally:
        engine.close()


@pytest.mark.parametrize("flushed", [False, True])
def test_a_range_tombstone_elsewhere_leaves_a_scan_on_the_single_source_path(tmp_path, flushed: bool) -> None:
    """Only tombstones over the scanned span are handed to the scan (`TombstoneIndex.meets`):
    one elsewhere no longer puts every scan on the merging path; one over the span still
    hides its keys."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _write(engine, range(0, 600), b"v")
        engine.flush()
        engine.compact()
        batch = WriteBatch()
        batch.delete_range(b"k00100", b"k00200")
        engine.write(batch)
        if flushed:  # the tombstone in the version rather than the memtable
            engine.flush()
        core = engine._core
        spans = {(b"k00300", b"k00400"): False, (b"k00200", None): False, (b"a", b"k00100"): False,
                 (b"k00150", b"k00151"): True, (b"a", b"k00101"): True, (b"k00199", None): True, (b"k", None): True}
        for (start, end), covered in spans.items():
            _cursors, tombs = core._cursors(core.read_state, start, end, False)
            assert bool(tombs) == covered, (start, end)
        snap = engine.snapshot()
        try:
            expected = [b"k%05d" % i for i in range(600) if not 100 <= i < 200]
            for (start, end) in spans:
                for reverse in (False, True):
                    got = [k for k, _v in snap.read_range(start, end, reverse, None)]
                    want = [k for k in expected if k >= start and (end is None or k < end)]
                    assert got == (want[::-1] if reverse else want), (start, end, reverse)
        finally:
            snap.close()
    finally:
        engine.close()
