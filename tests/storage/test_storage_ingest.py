"""Engine.ingest: sorted pairs in one atomic batch, checked against a dict model on both engines;
placement in the LSM's levels; snapshots; refusals that write nothing; kill -9 mid-ingest."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sqlkv.errors import InterfaceError
from sqlkv.storage.kv import PairColumns, WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.memory import MemoryEngine
from tests.storage.conftest import SMALL, model_scan


@pytest.fixture(params=["memory", "lsm", "lsm-inline"])
def engine(request, tmp_path):
    if request.param == "memory":
        eng = MemoryEngine()
    else:
        eng = open_lsm(str(tmp_path / "db"), durability="normal",
                       background_threads=request.param == "lsm", **SMALL)
    yield eng
    eng.close()


def _key(i: int) -> bytes:
    return b"k%06d" % i


def _check(engine, model: dict, rng: random.Random) -> None:
    assert list(engine.scan(b"", None)) == model_scan(model, b"", None, False, None)
    assert list(engine.scan(b"", None, reverse=True)) == model_scan(model, b"", None, True, None)
    for _ in range(50):
        k = _key(rng.randrange(4500))
        assert engine.get(k) == model.get(k), k
        end = _key(rng.randrange(4500))
        assert list(engine.scan(k, end, limit=7)) == model_scan(model, k, end, False, 7)


def _as_columns(pairs: list, rng: random.Random) -> PairColumns:
    """``pairs`` as `PairColumns` lists of uneven lengths (an empty one among them)."""
    chunks, at = [([], [])], 0
    while at < len(pairs):
        size = rng.randrange(1, 700)
        keys, values = zip(*pairs[at:at + size])
        chunks.append((list(keys), list(values)))
        at += size
    return PairColumns(chunks)


@pytest.mark.parametrize("columns", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_ingest_matches_a_dict_model(engine, seed, columns):
    rng = random.Random(seed)
    model: dict = {}
    for round_ in range(6):
        batch = WriteBatch()  # ordinary writes: puts, deletes, a range delete, over the same keys
        for _ in range(rng.randrange(50, 300)):
            i = rng.randrange(3000)
            if rng.random() < 0.8:
                value = b"w%d-%d" % (round_, i)
                batch.put(_key(i), value)
                model[_key(i)] = value
            else:
                batch.delete(_key(i))
                model.pop(_key(i), None)
        engine.write(batch)
        if rng.random() < 0.3:
            lo = rng.randrange(3000)
            batch = WriteBatch()
            batch.delete_range(_key(lo), _key(lo + 40))
            engine.write(batch)
            for k in [k for k in model if _key(lo) <= k < _key(lo + 40)]:
                del model[k]
        # an ingest over a random span, overlapping what is in memtables and tables
        lo = rng.randrange(3000)
        keys = sorted(rng.sample(range(lo, lo + 1500), rng.randrange(1, 600)))
        pairs = [(_key(i), b"i%d-%d" % (round_, i)) for i in keys]
        before = engine.last_seq
        point_reads = rng.random() < 0.5  # False: tables without a bloom filter (same answers)
        seq = engine.ingest(_as_columns(pairs, rng) if columns else iter(pairs), point_reads)
        assert seq == engine.last_seq and seq > before
        model.update(pairs)
        _check(engine, model, rng)
    if hasattr(engine, "compact"):
        engine.compact()
        _check(engine, model, rng)


def test_a_snapshot_sees_an_ingest_whole_or_not_at_all(engine):
    engine.write(_put(_key(5), b"old"))
    before = engine.snapshot()
    engine.ingest((_key(i), b"new") for i in range(0, 2000, 2))
    after = engine.snapshot()
    try:
        assert before.get(_key(5)) == b"old" and before.get(_key(4)) is None
        assert list(before.scan(b"", None)) == [(_key(5), b"old")]
        assert after.get(_key(4)) == b"new" and after.get(_key(5)) == b"old"
        assert len(list(after.scan(b"", None))) == 1001
    finally:
        before.close()
        after.close()


def test_an_empty_ingest_writes_nothing(engine):
    seq = engine.write(_put(b"a", b"1"))
    assert engine.ingest(iter([])) == seq == engine.last_seq


_BAD_INPUTS = [
    ([(b"b", b"1"), (b"a", b"2")], "strictly ascending"),
    ([(b"a", b"1"), (b"a", b"2")], "strictly ascending"),
    ([(b"a", "text")], "must be bytes"),
    ([b"abc"], "not a (key, value) pair"),
    ([7], "not a (key, value) pair"),
]


# PairColumns holds keys and values, so only the inputs made of pairs can be given as columns
@pytest.mark.parametrize("bad, message, columns", [
    (bad, message, columns) for bad, message in _BAD_INPUTS for columns in (False, True)
    if not columns or all(isinstance(item, tuple) for item in bad)
])
def test_bad_input_is_refused_and_writes_nothing(engine, tmp_path, bad, message, columns):
    engine.write(_put(b"a0", b"kept"))
    good = [(b"%05d" % i, b"v") for i in range(3000)]  # a few tables' worth before the bad item
    with pytest.raises(InterfaceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        engine.ingest(_as_columns(good + bad, random.Random(3)) if columns else iter(good + bad))
    assert list(engine.scan(b"", None)) == [(b"a0", b"kept")]
    if not isinstance(engine, MemoryEngine):
        assert sorted(n for n in os.listdir(tmp_path / "db") if n.endswith(".sst")) == \
            sorted(f"{t.number:06d}.sst" for lv in engine._core.version.levels for t in lv)


def test_pair_columns_of_unequal_lengths_are_refused(engine):
    engine.write(_put(b"a0", b"kept"))
    with pytest.raises(InterfaceError, match="equal lists of keys and values"):
        engine.ingest(PairColumns([([b"a1", b"a2"], [b"1", b"2"]), ([b"b1", b"b2"], [b"1"])]))
    assert list(engine.scan(b"", None)) == [(b"a0", b"kept")]


def _put(key: bytes, value: bytes) -> WriteBatch:
    batch = WriteBatch()
    batch.put(key, value)
    return batch


def test_lsm_places_ingested_tables_below_nothing_newer(tmp_path):
    engine = open_lsm(str(tmp_path / "db"), durability="normal", **SMALL)
    try:
        engine.ingest((_key(i), b"a") for i in range(1000))
        levels = engine._core.version.levels
        assert levels[-1] and not any(levels[:-1])  # an empty store: straight to the bottom
        engine.write(_put(_key(10), b"memtable"))  # overlaps the next ingest: flushed first
        engine.ingest((_key(i), b"b") for i in range(5, 15))
        assert engine.get(_key(10)) == b"b" and engine.get(_key(4)) == b"a"
        assert engine._core.mem.entries == 0
        engine.ingest((_key(i), b"c") for i in range(2000, 2100))  # disjoint from everything
        stats = engine.stats()
        assert stats["ingested"]["ingests"] == 3
    finally:
        engine.close()
    engine = open_lsm(str(tmp_path / "db"), durability="normal", **SMALL)
    try:  # the ingests are in the MANIFEST, and the WAL's seq chain has no gap
        assert engine.get(_key(10)) == b"b" and engine.get(_key(2050)) == b"c"
        assert engine.get(_key(999)) == b"a"
        assert engine.verify() == []
    finally:
        engine.close()


def test_lsm_ingest_without_point_reads_writes_tables_without_a_bloom_filter(tmp_path):
    engine = open_lsm(str(tmp_path / "db"), durability="normal", **SMALL)
    try:
        engine.ingest(((_key(i), b"a") for i in range(0, 3000, 2)), point_reads=False)
        engine.ingest(((_key(i), b"b") for i in range(5000, 8000, 2)), point_reads=True)
        core = engine._core
        infos = [info for level in core.version.levels for info in level]
        assert len(infos) > 2
        for info in infos:
            reader = core.readers[info.number]
            reader.load()
            assert (reader._bloom_nbits == 0) == (info.largest < _key(5000)), info
        for i in range(0, 8000, 7):  # present and absent keys, with and without a filter
            expected = (b"a" if i < 3000 else b"b" if i >= 5000 else None) if i % 2 == 0 else None
            assert engine.get(_key(i)) == expected
        assert list(engine.scan(_key(10), _key(20))) == [(_key(i), b"a") for i in range(10, 20, 2)]
        assert engine.verify() == []
        engine.compact()  # a compaction rewriting them builds filters again, answers unchanged
        assert engine.get(_key(2998)) == b"a" and engine.get(_key(2999)) is None
    finally:
        engine.close()


CHILD = textwrap.dedent(
    """
    import sys
    from sqlkv.storage.kv import WriteBatch
    from sqlkv.storage.lsm import open_lsm
    engine = open_lsm(sys.argv[1], durability="normal", memtable_size=16384, block_size=512,
                      target_file_size=16384, level_base_bytes=65536, l0_trigger=2)
    start = int(sys.argv[2])
    for n in range(start, start + 10_000):
        # each ingest writes 1500 keys with prefix n; a put between ingests keeps the WAL busy
        engine.ingest((b"%05d/%05d" % (n, i), b"v%d" % n * 4) for i in range(1500))
        batch = WriteBatch()
        batch.put(b"put/%05d" % n, b"p")
        engine.write(batch)
        sys.stdout.write("%d\\n" % n)
        sys.stdout.flush()
    """
)


def test_kill_during_ingest_loses_nothing_acknowledged_and_leaves_no_partial_ingest(tmp_path):
    path = str(tmp_path / "db")
    rng = random.Random(7)
    acked: list[int] = []
    start = 0
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", CHILD, path, str(start)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        # Kill at a random moment after the first acknowledgement: a fixed delay killed the
        # child before it acknowledged anything when the machine was loaded.
        first = child.stdout.readline()
        time.sleep(rng.random() * 1.5)
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        assert child.returncode == -signal.SIGKILL, err.decode()[-2000:]
        acked += [int(line) for line in (first + out).decode().split()]
        engine = open_lsm(path, durability="normal")
        try:
            assert engine.verify() == []
            counts: dict[int, int] = {}
            for key, value in engine.scan(b"0", b"99999"):
                n = int(key[:5])
                counts[n] = counts.get(n, 0) + 1
                assert value == b"v%d" % n * 4
            for n in acked:
                assert counts.get(n) == 1500 and engine.get(b"put/%05d" % n) == b"p", n
            partial = {n: c for n, c in counts.items() if c != 1500}
            assert partial == {}, partial  # every ingest is whole or absent
            start = max(counts, default=-1) + 1
        finally:
            engine.close()
    assert acked, "the child never acknowledged an ingest"
    print(f"\ningest crash campaign: 3 kills, {len(acked)} acknowledged ingests, lost 0, partial 0")


def test_close_during_an_ingest_stops_it_and_leaves_nothing(tmp_path):
    import threading

    path = str(tmp_path / "db")
    engine = open_lsm(path, durability="normal", **SMALL)
    engine.write(_put(b"a", b"kept"))
    core = engine._core
    closer = threading.Thread(target=engine.close)

    def pairs():
        for i in range(20_000):
            if i == 5000:  # close() from another thread; it waits for the write lock
                closer.start()
                deadline = time.monotonic() + 30
                while not core.closing and time.monotonic() < deadline:
                    time.sleep(0.001)
            yield b"i%06d" % i, b"v"

    with pytest.raises(InterfaceError, match="closed during ingest"):
        engine.ingest(pairs())
    closer.join(30)
    assert not closer.is_alive()
    engine = open_lsm(path, durability="normal", **SMALL)
    try:
        assert list(engine.scan(b"", None)) == [(b"a", b"kept")]
        listed = {f"{t.number:06d}.sst" for lv in engine._core.version.levels for t in lv}
        assert {n for n in os.listdir(path) if n.endswith(".sst")} == listed
    finally:
        engine.close()
