"""Short prefix reads (lsm/shortread.py, `Snapshot.read_prefix` and `read_prefixes`): the pairs under one prefix
read source by source without a scan. Every answer must equal the lazy scan's pairs (or be
None exactly when there are more than ``most``), with the prefixes' entries spread over the
memtable, L0 and the levels, across block and table boundaries, with several versions,
point and range deletions, and snapshots that see only some of them."""

from __future__ import annotations

import random
import threading
import time

import pytest
from sortedcontainers import SortedList

from sqlkv.storage.kv import OP_PUT, WriteBatch, prefix_end
from sqlkv.storage.lsm.memtable import Memtable, _page_keys
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.lsm.shortread import short_read
from sqlkv.storage.lsm.sstable import packed
from tests.storage.conftest import SMALL

GROUPS = 40  # prefixes p000/ .. p039/, group g holding g % 7 * 3 keys (0 to 18)


def _prefix(group: int) -> bytes:
    return b"p%03d/" % group


def _keys(group: int) -> list[bytes]:
    return [_prefix(group) + b"%04d" % i for i in range(group % 7 * 3)]


def _check(engine, snap, most: int) -> int:
    """Compare every prefix's reads with the scan; return how many `short_read` answered
    itself (without the range read behind `read_prefix`)."""
    answered = 0
    for group in range(-1, GROUPS + 1):
        start = _prefix(group)
        end = prefix_end(start)
        whole = list(snap.scan(start, end))
        want = whole if len(whole) <= most else None
        assert snap.read_prefix(start, end, most) == want, (group, most)
        assert snap.read_prefixes([(start, end), (b"a", b"b"), (start, end)], most) == [want, [], want]
        direct = short_read(_core(engine).read_state, start, end, snap.seq, most)
        if direct is not None:
            assert direct == want, (group, most)
            answered += 1
    return answered


def _core(engine):
    return engine._live()


def _put_all(engine, keys: list[bytes], value: bytes) -> None:
    """Put ``keys`` in one batch and flush them to a table."""
    batch = WriteBatch()
    for key in keys:
        batch.put(key, value)
    engine.write(batch)
    engine.flush()


@pytest.mark.parametrize("flush_every, cache_size, sampled", [
    (0, SMALL["cache_size"], False), (1, SMALL["cache_size"], False), (2, SMALL["cache_size"], False),
    (1, 0, False), (2, 1 << 24, False), (1, SMALL["cache_size"], True), (1, 0, True)])
def test_read_prefix_equals_the_scan(tmp_path, monkeypatch, flush_every: int, cache_size: int,
                                     sampled: bool) -> None:
    """Round after round of puts, deletes and range deletes; after each, every prefix read
    at this round's snapshot and at every earlier one still open matches the scan. The
    cache sizes: no cache (every block read from its bytes), a full one (packed blocks hit
    again without their key lists) and a roomy one (hit blocks decode their key lists).
    Sampled: every packed block keeps every other key (`PackedBlock.samples`, kept by the
    long keys sections of real index blocks), so a read's first entry is found in a window."""
    if sampled:
        monkeypatch.setattr(packed, "SAMPLED_SECTION", 0)
        monkeypatch.setattr(packed, "SAMPLE_EVERY", 2)
    engine = open_lsm(str(tmp_path), durability="off", **{**SMALL, "cache_size": cache_size})
    rng = random.Random(flush_every)
    snaps = []
    try:
        for round_ in range(6):
            batch = WriteBatch()
            for group in range(GROUPS):
                for key in _keys(group):
                    if rng.random() < 0.5:
                        batch.put(key, b"v%d-" % round_ + key)
                    elif rng.random() < 0.3:
                        batch.delete(key)
            if round_ % 2:
                group = rng.randrange(GROUPS)
                batch.delete_range(_prefix(group) + b"0002", _prefix(group) + b"0009")
            engine.write(batch)
            if flush_every and round_ % flush_every == 0:
                engine.flush()
                if round_ % 4 == 0:
                    engine.compact()
            snaps.append(engine.snapshot())
            for snap in snaps:
                for most in (0, 1, 3, 64):
                    answered = _check(engine, snap, most)
                assert answered > GROUPS // 2  # most=64: the short read itself, mostly
    finally:
        for snap in snaps:
            snap.close()
        engine.close()


def test_short_read_gives_up_on_a_crowded_source(tmp_path) -> None:
    """A source with more entries in the span than ``most`` (live or deleted) is not read
    through: None, and `read_prefix` then answers from a range read."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _put_all(engine, [b"q/%03d" % i for i in range(50)], b"x" * 20)
        batch = WriteBatch()
        for i in range(48):
            batch.delete(b"q/%03d" % i)  # two live keys left, behind 48 tombstones
        engine.write(batch)
        with engine.snapshot() as snap:
            core = _core(engine)
            assert short_read(core.read_state, b"q/", b"q0", snap.seq, 10) is None
            assert snap.read_prefix(b"q/", b"q0", 10) == [(b"q/048", b"x" * 20), (b"q/049", b"x" * 20)]
            assert snap.read_prefix(b"q/", b"q0", 1) is None
            assert snap.read_prefix(b"q/049", None, 5) == [(b"q/049", b"x" * 20)]  # to the end
    finally:
        engine.close()


def test_a_span_straddling_tables_of_a_level(tmp_path) -> None:
    """One prefix whose keys fill several tables of one level (target_file_size 4 KB): all
    of them, in order, from every table the span meets."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    try:
        _put_all(engine, [b"r/%04d" % i for i in range(400)], b"y" * 40)
        engine.compact()
        core = _core(engine)
        assert any(len(tables) > 2 for _largest, _smallest, tables in core.read_state.levels)
        with engine.snapshot() as snap:
            for start in (b"r/", b"r/01", b"r/0399", b"r/1"):
                end = prefix_end(start)
                assert snap.read_prefix(start, end, 500) == list(snap.scan(start, end))
    finally:
        engine.close()


def test_prefix_reads_of_a_snapshot_while_flushes_and_compactions_run(tmp_path) -> None:
    """A snapshot's prefix reads keep answering what they answered, and what its scan
    answers, while a writer overwrites and deletes under every prefix and the background
    threads flush and compact (tables replaced and deleted under the readers)."""
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    stop = threading.Event()

    def writer() -> None:
        rng = random.Random(2)
        while not stop.is_set():
            batch = WriteBatch()
            for group in rng.sample(range(GROUPS), 8):
                for key in _keys(group):
                    if rng.random() < 0.7:
                        batch.put(key, b"w%d" % rng.randrange(1000))
                    else:
                        batch.delete(key)
            engine.write(batch)

    try:
        rng = random.Random(1)
        batch = WriteBatch()
        for group in range(GROUPS):
            for key in _keys(group):
                batch.put(key, b"first-" + key)
        engine.write(batch)
        with engine.snapshot() as snap:
            spans = [(_prefix(g), prefix_end(_prefix(g))) for g in range(GROUPS)]
            want = [list(snap.scan(start, end)) for start, end in spans]
            before = engine.stats()
            thread = threading.Thread(target=writer)
            thread.start()
            try:
                for _ in range(300):
                    g = rng.randrange(GROUPS)
                    assert snap.read_prefix(*spans[g], 64) == want[g]
                    assert snap.read_prefixes(spans[g:g + 3], 64) == want[g:g + 3]
                deadline = time.monotonic() + 60
                while engine.stats()["compactions"] == before["compactions"]:  # tables did change
                    assert snap.read_prefix(*spans[7], 64) == want[7]
                    assert time.monotonic() < deadline, "no compaction ran"
            finally:
                stop.set()
                thread.join()
            assert engine.stats()["flushes"] > before["flushes"]
            assert [list(snap.scan(start, end)) for start, end in spans] == want
    finally:
        engine.close()


@pytest.mark.parametrize("seed", range(4))
def test_memtable_has_keys_in_as_a_search_of_its_keys(seed: int) -> None:
    """`Memtable.has_keys_in` (the first key at or after the start found in the sorted list's
    sublists) answers as a search of the sorted keys, over memtables large enough to hold
    many sublists, for spans inside, between, before and after the keys."""
    rng = random.Random(seed)
    mem = Memtable()
    keys: list[bytes] = []
    for round_ in range(3):
        batch = [bytes(rng.randrange(97, 101) for _ in range(rng.randint(1, 6))) for _ in range(rng.choice((0, 3, 2500)))]
        mem.apply([(OP_PUT, key, b"v") for key in batch], round_ * 10_000)
        keys = sorted(set(keys) | set(batch))
        for _ in range(300):
            start = bytes(rng.randrange(96, 102) for _ in range(rng.randint(0, 6)))
            end = None if rng.random() < 0.1 else start + bytes(rng.randrange(0, 3) for _ in range(rng.randint(0, 2)))
            want = any(start <= key and (end is None or key < end) for key in keys)
            assert mem.has_keys_in(start, end) == want, (start, end)


@pytest.mark.parametrize("load", [4, 10, 1000])
def test_memtable_page_keys_as_the_sorted_lists_range(load: int) -> None:
    """`_page_keys` (the range's ends placed in the sorted list's sublists, the keys sliced
    out of them) gives the first (or, reverse, the last) ``most`` keys of the range that
    `SortedList.irange` gives, over lists of one sublist and of many (small loads)."""
    rng = random.Random(load)
    for _ in range(120):
        keys = SortedList()
        keys._reset(load)
        keys.update({bytes(rng.randrange(97, 100) for _ in range(rng.randint(1, 5)))
                     for _ in range(rng.choice([0, 1, 5, 60, 400]))})
        for _ in range(60):
            lo = bytes(rng.randrange(96, 101) for _ in range(rng.randint(0, 5)))
            hi = None if rng.random() < 0.2 else bytes(rng.randrange(96, 101) for _ in range(rng.randint(0, 5)))
            lo_inc, hi_inc, reverse = rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5
            most = rng.choice([1, 2, 3, 7, 50, 128])
            every = [] if hi is not None and hi < lo else list(keys.irange(lo, hi, (lo_inc, hi_inc)))
            want = every[-most:] if reverse else every[:most]
            assert _page_keys(keys, lo, hi, lo_inc, hi_inc, reverse, most) == want
