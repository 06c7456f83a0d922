"""Short limited reads (lsm/firstread.py, behind `Snapshot.read_range` with a small limit): the
first or last few pairs of a span read source by source without a scan. Every answer must equal
the lazy scan's first pairs (or be None, the caller then scanning), with the span's keys over the
memtable, L0 and the levels, across block and table boundaries, with several versions, point and
range deletions, and snapshots that see only some of them."""

from __future__ import annotations

import random
import threading
import time
from itertools import islice

import pytest

from sqlkv.storage.kv import WriteBatch, prefix_end
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.firstread import first_read
from tests.storage.conftest import SMALL

SPANS = [(b"k", b"l"), (b"k0100", b"k0150"), (b"k0199", None), (b"a", b"k0003"), (b"k0150", b"k0150\x00"),
         (b"z", None), (b"k0050", b"k0060")]


def _key(i: int) -> bytes:
    return b"k%04d" % i


def _check(engine, snap) -> int:
    """Compare the limited reads of every span with the scan; return how many `first_read`
    answered itself."""
    answered = 0
    state = engine._live().read_state
    for start, end in SPANS:
        for reverse in (False, True):
            for limit in (1, 2, 10, 64):
                want = list(islice(snap.scan(start, end, reverse), limit))
                assert snap.read_range(start, end, reverse, limit) == want, (start, end, reverse, limit)
                for width in (None, limit + 1, limit + 8, 8 * limit + 64):  # keys per source
                    direct = first_read(state, start, end, snap.seq, limit, reverse, width)
                    if direct is not None:
                        assert direct == want, (start, end, reverse, limit, width)
                        answered += 1
    return answered


@pytest.mark.parametrize("ranges", [True, False])
@pytest.mark.parametrize("flush_every", [0, 1, 3])
def test_limited_reads_equal_the_scan(tmp_path, flush_every: int, ranges: bool) -> None:
    """Round after round of puts, deletes and (with ``ranges``) range deletes over 200 keys;
    after each, every span's limited reads at this round's snapshot and at every earlier one
    match the scan. Without range deletions `first_read` merges its sources newest first
    (`_newest_first`), slicing the blocks every version of which a snapshot sees."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    rng = random.Random(flush_every)
    snaps = []
    answered = 0
    try:
        for round_ in range(6):
            batch = WriteBatch()
            for i in range(200):
                if rng.random() < 0.4:
                    batch.put(_key(i), b"v%d-%d" % (round_, i))
                elif rng.random() < 0.2:
                    batch.delete(_key(i))
            if ranges and round_ % 2:
                first = rng.randrange(190)
                batch.delete_range(_key(first), _key(first + rng.randrange(2, 30)))
            engine.write(batch)
            if flush_every and round_ % flush_every == 0:
                engine.flush()
                if round_ % 2 == 0:
                    engine.compact()
            snaps.append(engine.snapshot())
            for snap in snaps:
                answered += _check(engine, snap)
        assert answered > 0
    finally:
        for snap in snaps:
            snap.close()
        engine.close()


def test_tombstones_past_the_limit_fall_back_to_the_scan(tmp_path) -> None:
    """A table's first keys all deleted by a newer source: the short read cannot tell what
    follows its limit (None), and `read_range` answers from the scan."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        batch = WriteBatch()
        for i in range(60):
            batch.put(_key(i), b"x" * 30)
        engine.write(batch)
        engine.flush()
        engine.compact()
        batch = WriteBatch()
        for i in range(20):
            batch.delete(_key(i))
        engine.write(batch)
        with engine.snapshot() as snap:
            state = engine._live().read_state
            assert first_read(state, b"k", b"l", snap.seq, 5, False) is None
            assert first_read(state, b"k", b"l", snap.seq, 5, False, 13) is None
            # wider, the memtable's twenty deletions and the table's sixty keys are all seen
            assert first_read(state, b"k", b"l", snap.seq, 5, False, 104) == [
                (_key(i), b"x" * 30) for i in range(20, 25)]
            assert snap.read_range(b"k", b"l", False, 5) == [(_key(i), b"x" * 30) for i in range(20, 25)]
            assert first_read(state, b"k", b"l", snap.seq, 5, True) == [
                (_key(i), b"x" * 30) for i in range(59, 54, -1)]
    finally:
        engine.close()


def test_a_span_over_several_tables_of_a_level(tmp_path) -> None:
    """400 keys compacted into several tables of one level: a limited read from any start,
    forward or back, crosses table and block boundaries as the scan does."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        batch = WriteBatch()
        for i in range(400):
            batch.put(b"r/%04d" % i, b"y" * 40)
        engine.write(batch)
        engine.flush()
        engine.compact()
        state = engine._live().read_state
        assert any(len(tables) > 2 for _largest, _smallest, tables in state.levels)
        with engine.snapshot() as snap:
            for start in (b"r/", b"r/01", b"r/0399", b"r/1", b"r/0100"):
                end = prefix_end(start)
                for reverse in (False, True):
                    want = list(islice(snap.scan(start, end, reverse), 40))
                    assert first_read(state, start, end, snap.seq, 40, reverse) == want
    finally:
        engine.close()


def test_limited_reads_of_a_snapshot_while_flushes_and_compactions_run(tmp_path) -> None:
    """A snapshot's limited reads keep answering what its scan answered while a writer
    overwrites and deletes keys and the background threads flush and compact (tables replaced
    and deleted under the readers)."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    stop = threading.Event()

    def writer() -> None:
        rng = random.Random(2)
        while not stop.is_set():
            batch = WriteBatch()
            for i in rng.sample(range(200), 20):
                if rng.random() < 0.7:
                    batch.put(_key(i), b"w%d" % rng.randrange(1000))
                else:
                    batch.delete(_key(i))
            engine.write(batch)

    try:
        batch = WriteBatch()
        for i in range(200):
            batch.put(_key(i), b"first-%d" % i)
        engine.write(batch)
        with engine.snapshot() as snap:
            spans = [(_key(i), _key(i + 30)) for i in range(0, 200, 10)]
            want = {(span, reverse): list(islice(snap.scan(*span, reverse), 8))
                    for span in spans for reverse in (False, True)}
            before = engine.stats()
            thread = threading.Thread(target=writer)
            thread.start()
            try:
                rng = random.Random(1)
                deadline = time.monotonic() + 60
                reads = 0
                while reads < 300 or engine.stats()["compactions"] == before["compactions"]:
                    span, reverse = spans[rng.randrange(len(spans))], rng.random() < 0.5
                    assert snap.read_range(*span, reverse, 8) == want[span, reverse]
                    reads += 1
                    assert time.monotonic() < deadline, "no compaction ran"
            finally:
                stop.set()
                thread.join()
    finally:
        engine.close()
