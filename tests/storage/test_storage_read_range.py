"""`read_range` (a batched scan's read) from a single source hands out whole chunks at once
(`iterators.merged_chunks`): its pairs must equal the lazy scan's for every limit, across
block and table boundaries, for simple chunks (every version visible) and for chunks an
older snapshot sees only part of."""

from __future__ import annotations

import pytest

from sqlkv.errors import InterfaceError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.iterators import LONG_RUN, merged_chunks
from tests.storage.conftest import SMALL, model_scan


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


def _pinned(engine) -> int:
    return sum(v.pins for v in engine._core.pinned.values())


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("l0", [False, True])
@pytest.mark.parametrize("ranges", [False, True])
def test_range_reader_over_one_big_source_and_scattered_small_ones(tmp_path, reverse: bool, l0: bool,
                                                                   ranges: bool) -> None:
    """The merged scan's shape after a load and a few scattered writes: one compacted bottom
    level, then updates, point deletes and range deletes spread over it in an L0 table and
    in the memtable, or all in the memtable, with or without range deletes (without, two
    sources take `_merge_two_forward`). Read in lists of many sizes by one `range_reader`
    (cursors kept between reads), the pairs are the model's (and the lazy scan's), for the
    newest and an older snapshot; the version is unpinned once a read comes back short, and
    on close."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _write(engine, range(0, 2000), b"old")
        engine.flush()
        engine.compact()
        old = engine.snapshot()
        batch = WriteBatch()
        for i in range(7, 2000, 97):
            batch.put(b"k%05d" % i, b"upd%05d" % i)
        for i in range(50, 2000, 211):
            batch.delete(b"k%05d" % i)
        if ranges:
            batch.delete_range(b"k00300", b"k00340")
        engine.write(batch)
        if l0:  # an L0 table over the bottom level: three sources, else two (`_merge_two_forward`)
            engine.flush()
        batch = WriteBatch()
        for i in range(3, 2000, 131):
            batch.put(b"k%05d" % i, b"mem%05d" % i)
        batch.delete(b"k00007")  # hides an update sitting in L0
        if ranges:
            batch.delete_range(b"k01500", b"k01502")
        engine.write(batch)
        latest = engine.snapshot()
        models = {False: {b"k%05d" % i: b"old%05d" % i for i in range(2000)}}
        new = dict(models[False])
        new.update({b"k%05d" % i: b"upd%05d" % i for i in range(7, 2000, 97)})
        for i in [*range(50, 2000, 211), *(range(300, 340) if ranges else ())]:
            new.pop(b"k%05d" % i, None)
        new.update({b"k%05d" % i: b"mem%05d" % i for i in range(3, 2000, 131)})
        for i in (7, 1500, 1501) if ranges else (7,):
            new.pop(b"k%05d" % i, None)
        models[True] = new
        try:
            for snap in (old, latest):
                for start, end in ((b"k", None), (b"k00299", b"k01777")):
                    whole = list(snap.scan(start, end, reverse=reverse))
                    assert whole == model_scan(models[snap is latest], start, end, reverse, None)
                    for sizes in ((1,), (16, 32, 64, 128, 256), (255,), (5000,)):
                        reader = snap.range_reader(start, end, reverse)
                        got: list = []
                        i = 0
                        while True:
                            size = sizes[min(i, len(sizes) - 1)]
                            i += 1
                            part = reader.read(size)
                            got += part
                            if len(part) < size:
                                break
                            assert _pinned(engine) >= 1
                        assert got == whole, (start, end, sizes)
                        assert _pinned(engine) == 0  # the short read released the version
                    reader = snap.range_reader(start, end, reverse)
                    assert reader.read(3) == whole[:3]
                    reader.close()
                    assert _pinned(engine) == 0 and reader.read(3) == []
            assert {v[:3] for _k, v in old.read_range(b"k", None)} == {b"old"}
            assert latest.read_range(b"k00007", b"k00008") == []
            if ranges:
                assert latest.read_range(b"k00299", b"k00341") == [(b"k00299", b"old00299"),
                                                                   (b"k00340", b"old00340")]
        finally:
            old.close()
            latest.close()
    finally:
        engine.close()


@pytest.mark.parametrize("closing", ["snapshot", "engine"])
def test_range_reader_of_a_closed_snapshot_or_engine_refuses(tmp_path, closing: str) -> None:
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    _write(engine, range(0, 300), b"v")
    snap = engine.snapshot()
    reader = snap.range_reader(b"k", None)
    assert len(reader.read(10)) == 10
    (snap if closing == "snapshot" else engine).close()
    with pytest.raises(InterfaceError, match="closed"):
        reader.read(10)
    engine.close()


def test_range_reader_survives_flushes_and_compactions_between_reads(tmp_path) -> None:
    """The tables a range reader opened stay readable while it is open (its version is
    pinned) though flushes and compactions replace them between its reads; their files
    leave the directory once it is done."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _write(engine, range(0, 1500), b"old")
        engine.flush()
        engine.compact()
        _write(engine, range(0, 1500, 7), b"mid")
        snap = engine.snapshot()
        want = [(b"k%05d" % i, (b"mid" if i % 7 == 0 else b"old") + b"%05d" % i) for i in range(1500)]
        reader = snap.range_reader(b"k", None)
        got = reader.read(100)
        pinned = [v for v in engine._core.pinned.values() if v.pins]
        assert len(pinned) == 1  # the reader's version
        pinned_tables = {tmp_path / f"{n:06d}.sst" for n in pinned[0].file_numbers()}
        for round_ in range(3):
            _write(engine, range(round_, 1500, 5), b"new")
            batch = WriteBatch()
            batch.delete_range(b"k00400", b"k00900")
            engine.write(batch)
            engine.flush()
            engine.compact()
            got += reader.read(300)
        assert pinned_tables <= set(tmp_path.glob("*.sst"))  # still there for the open reader
        got += reader.read()
        assert got == want
        assert pinned_tables - set(tmp_path.glob("*.sst"))  # the finished reader released them
        snap.close()
    finally:
        engine.close()


@pytest.mark.parametrize("sources", [2, 3])
def test_merge_of_interleaved_sources_hands_out_small_chunks(tmp_path, sources: int) -> None:
    """Sources taking turns key by key give runs of one entry: the merge gathers them in
    lists of about `LONG_RUN`, never the rest of the range at once (a batch of 16 rows must
    not merge the whole table first)."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        for phase in range(sources):
            _write(engine, range(phase, 3000, sources), b"p%d" % phase)
            if phase < sources - 1:
                engine.flush()  # earlier phases in tables, the last in the memtable
        core = engine._core
        state, seq = core.latest()
        cursors, tombs = core._cursors(state, b"k", None, False)
        assert len(cursors) >= 2
        sizes = [len(list(chunk)) for chunk in merged_chunks(cursors, seq, tombs, False)]
        assert sum(sizes) == 3000
        assert max(sizes) <= 2 * LONG_RUN, sizes
    finally:
        engine.close()
