"""Time travel in the engines (sqlkv.storage.history): the commit timeline and the retention
window, checked against a model that remembers the state after every batch.

Every test drives an injected clock (no sleeps): each batch is written at a known time, so
``snapshot_as_of(T)`` must show exactly the state after the last batch written at or before
``T`` -- through flushes and compactions (tiny LSM options make them happen every few batches),
across close and reopen, and until the window passes: then compaction drops the old versions
(the bytes on disk shrink) and reads there are refused.
"""

from __future__ import annotations

import os
import random

import pytest

from sqlkv.errors import DataError, NotSupportedError, OperationalError, ProgrammingError
from sqlkv.storage import open_engine
from sqlkv.storage.history import TIMELINE, TIMELINE_END
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm
from sqlkv.storage.memory import MemoryEngine

from tests.storage.conftest import SMALL, apply_ops, to_batch

START = 1_700_000_000.0


class Clock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def user_state(reader) -> dict:
    """Everything but the timeline."""
    return dict(list(reader.scan(b"", TIMELINE)) + list(reader.scan(TIMELINE_END, None)))


def _open(kind: str, tmp_path, clock: Clock, gc_ttl: float = 100.0):
    if kind == "memory":
        return MemoryEngine(gc_ttl=gc_ttl, clock=clock)
    return open_lsm(str(tmp_path / "db"), gc_ttl=gc_ttl, clock=clock, background_processes=False, **SMALL)


def _random_ops(rng: random.Random) -> list:
    ops = []
    for _ in range(rng.randint(1, 6)):
        key = b"\xf0k%03d" % rng.randrange(40)
        roll = rng.random()
        if roll < 0.65:
            ops.append(("put", key, b"v%d" % rng.randrange(10**6) * rng.randint(1, 20)))
        elif roll < 0.9:
            ops.append(("delete", key))
        else:
            ops.append(("range", key, key + b"\xff"))
    return ops


def _write_history(engine, clock: Clock, rng: random.Random, count: int, model: dict) -> list:
    """Write ``count`` random batches one second apart; [(time, state after)]."""
    states = []
    for _ in range(count):
        ops = _random_ops(rng)
        engine.write(to_batch(ops))
        apply_ops(model, ops)
        states.append((clock.now, dict(model)))
        clock.now += 1.0
    return states


def _check_states(engine, states: list) -> None:
    for when, expected in states:
        for t in (when, when + 0.5):  # a time between two commits sees the earlier one
            with engine.snapshot_as_of(t) as snap:
                assert user_state(snap) == expected, f"state at {t - START}s {snap.seq} {engine.stats()}"


@pytest.mark.parametrize("kind", ["memory", "lsm"])
def test_every_past_state_reads_back_through_flushes_and_compactions(kind, tmp_path):
    clock = Clock()
    engine = _open(kind, tmp_path, clock)
    model: dict = {}
    states = _write_history(engine, clock, random.Random(7), 60, model)
    _check_states(engine, states)
    engine.flush()
    engine.compact()  # everything merged: the versions the window needs must survive
    _check_states(engine, states)
    assert user_state(engine) == model
    engine.close()


def test_past_states_survive_close_and_reopen(tmp_path):
    clock = Clock()
    engine = _open("lsm", tmp_path, clock)
    model: dict = {}
    states = _write_history(engine, clock, random.Random(3), 40, model)
    engine.close()
    engine = _open("lsm", tmp_path, clock)  # half in tables, half replayed from the WAL
    _check_states(engine, states)
    states += _write_history(engine, clock, random.Random(4), 20, model)
    engine.compact()
    engine.close()
    engine = _open("lsm", tmp_path, clock)
    _check_states(engine, states)
    engine.close()


def _table_bytes(path) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if n.endswith(".sst"))


@pytest.mark.parametrize("kind", ["memory", "lsm"])
def test_versions_older_than_the_window_are_dropped(kind, tmp_path):
    clock = Clock()
    engine = _open(kind, tmp_path, clock, gc_ttl=50.0)
    key = b"\xf0hot"
    for i in range(200):  # one key rewritten 200 times inside the window
        batch = WriteBatch()
        batch.put(key, b"%04d" % i * 256)
        engine.write(batch)
        clock.now += 0.1
    engine.flush()
    engine.compact()
    kept = _table_bytes(tmp_path / "db") if kind == "lsm" else len(engine._data[key])
    with engine.snapshot_as_of(START + 5.0) as snap:  # all of them are still readable
        assert snap.get(key) == b"%04d" % 50 * 256
    clock.now += 100.0  # the window passes all of them
    batch = WriteBatch()
    batch.put(b"\xf0other", b"x")
    engine.write(batch)
    engine.flush()
    engine.compact()
    if kind == "lsm":
        assert _table_bytes(tmp_path / "db") * 10 < kept  # 200 versions of 1 KB -> 1 (and the timeline)
        assert engine.stats()["gc_threshold_seq"] > 0
    else:
        assert kept == 200 and len(engine._data[key]) == 1
    with pytest.raises(OperationalError, match="GC threshold"):
        engine.snapshot_as_of(START + 5.0)
    with engine.snapshot_as_of(clock.now) as snap:
        assert snap.get(key) == b"%04d" % 199 * 256
    engine.close()


def test_gc_threshold_outlives_a_wider_window_at_reopen(tmp_path):
    """Versions dropped under gc_ttl=50 stay unreadable when the database reopens with 5000."""
    clock = Clock()
    engine = _open("lsm", tmp_path, clock, gc_ttl=50.0)
    model: dict = {}
    _write_history(engine, clock, random.Random(5), 30, model)
    clock.now += 100.0
    states = _write_history(engine, clock, random.Random(6), 5, model)
    engine.compact()
    engine.close()
    engine = _open("lsm", tmp_path, clock, gc_ttl=5000.0)
    with pytest.raises(OperationalError, match="GC threshold"):
        engine.snapshot_as_of(START + 10.0)
    _check_states(engine, states)
    engine.close()


@pytest.mark.parametrize("kind", ["memory", "lsm"])
def test_bad_times_are_refused(kind, tmp_path):
    clock = Clock()
    engine = _open(kind, tmp_path, clock)
    with pytest.raises(OperationalError, match="nothing is readable yet"):
        engine.snapshot_as_of(clock.now)
    clock.now += 10
    engine.write(to_batch([("put", b"\xf0a", b"1")]))
    with pytest.raises(DataError, match="in the future"):
        engine.snapshot_as_of(clock.now + 1)
    with pytest.raises(DataError, match="not a time"):
        engine.snapshot_as_of(float("nan"))
    with pytest.raises(OperationalError, match="recorded history, which begins"):
        engine.snapshot_as_of(clock.now - 5)
    with pytest.raises(OperationalError, match="before the GC threshold"):
        engine.snapshot_as_of(clock.now - 101)
    engine.close()


def test_history_off_refuses_and_keeps_nothing(tmp_path):
    clock = Clock()
    engine = open_lsm(str(tmp_path / "db"), gc_ttl=0, clock=clock)
    engine.write(to_batch([("put", b"\xf0a", b"1")]))
    assert list(engine.scan(TIMELINE, TIMELINE_END)) == []  # nothing stamped
    with pytest.raises(NotSupportedError, match="gc_ttl=0"):
        engine.snapshot_as_of(clock.now)
    engine.close()


def test_a_run_without_history_restarts_the_timeline(tmp_path):
    """Commits made with gc_ttl=0 have no sample: times before the next writable open with
    history must be refused, not mapped to a seq that misses them."""
    clock = Clock()
    engine = _open("lsm", tmp_path, clock)
    engine.write(to_batch([("put", b"\xf0a", b"1")]))
    engine.close()
    clock.now += 5
    engine = open_lsm(str(tmp_path / "db"), gc_ttl=0, clock=clock)
    engine.write(to_batch([("put", b"\xf0a", b"2")]))  # no sample: its time is unknown
    engine.close()
    clock.now += 5
    engine = _open("lsm", tmp_path, clock)
    with pytest.raises(OperationalError, match="recorded history"):
        engine.snapshot_as_of(clock.now - 1)
    with engine.snapshot_as_of(clock.now) as snap:
        assert snap.get(b"\xf0a") == b"2"
    engine.close()


def test_every_batch_carries_its_sample(tmp_path):
    """The sample travels in the batch (same WAL record): one per batch, mapping to its seq."""
    clock = Clock()
    engine = _open("lsm", tmp_path, clock, gc_ttl=10_000.0)
    seqs = []
    for i in range(5):
        seqs.append(engine.write(to_batch([("put", b"\xf0a", b"%d" % i), ("put", b"\xf0b", b"x")])))
        clock.now += 1
    seqs.append(engine.ingest(iter([(b"\xf1a", b"1"), (b"\xf1b", b"2")])))
    engine.close()
    engine = _open("lsm", tmp_path, clock, gc_ttl=10_000.0)
    samples = list(engine.scan(TIMELINE, TIMELINE_END))
    assert [int.from_bytes(v, "big") for _, v in samples] == seqs
    with engine.snapshot_as_of(clock.now) as snap:
        assert snap.get(b"\xf1b") == b"2"
    with engine.snapshot_as_of(clock.now - 0.5) as snap:
        assert snap.get(b"\xf1b") is None and snap.get(b"\xf0a") == b"4"
    engine.close()


def test_an_open_read_of_the_past_keeps_its_versions_while_the_window_moves(tmp_path):
    clock = Clock()
    engine = _open("lsm", tmp_path, clock, gc_ttl=50.0)
    model: dict = {}
    states = _write_history(engine, clock, random.Random(9), 20, model)
    when, expected = states[3]
    snap = engine.snapshot_as_of(when)
    clock.now += 500  # the window passes the snapshot's time: only the snapshot holds it
    _write_history(engine, clock, random.Random(10), 20, model)
    engine.compact()
    assert user_state(snap) == expected
    snap.close()
    engine.close()


def test_gc_ttl_is_checked_and_etcd_refuses_it():
    for bad in (-1, "10s", float("nan"), True):
        with pytest.raises(ProgrammingError, match="gc_ttl must be"):
            open_engine(":memory:", gc_ttl=bad)
    with pytest.raises(NotSupportedError, match="not supported on etcd"):
        open_engine("etcd://127.0.0.1:1/x", gc_ttl=60)


def test_a_damaged_timeline_is_reported_and_the_store_still_opens(tmp_path):
    from sqlkv.errors import CorruptionError

    clock = Clock()
    path = str(tmp_path / "db")
    engine = open_lsm(path, gc_ttl=100.0, clock=clock)
    for i in range(20):
        engine.write(to_batch([("put", b"\xf0k%02d" % i, b"v" * 40)]))
        clock.now += 1
    engine.flush()
    engine.close()
    table = max((n for n in os.listdir(path) if n.endswith(".sst")), key=lambda n: os.path.getsize(os.path.join(path, n)))
    with open(os.path.join(path, table), "r+b") as f:  # the first block: the timeline's samples
        f.seek(20)
        byte = f.read(1)
        f.seek(20)
        f.write(bytes([byte[0] ^ 4]))
    engine = open_lsm(path, gc_ttl=100.0, clock=clock)
    assert any(table in problem for problem in engine.verify())
    with pytest.raises(CorruptionError, match=table):
        engine.snapshot_as_of(clock.now - 5)
    engine.write(to_batch([("put", b"\xf1new", b"x")]))  # commits go on
    assert engine.get(b"\xf1new") == b"x"
    engine.close()


def test_reads_of_the_past_race_writers_and_compactions(tmp_path):
    """Readers in threads read recorded past states while a writer goes on and the window
    (1 s of a clock the writer moves 10 ms per batch) slides past them, with background
    flushes and compactions running: every read either returns exactly the state of its time
    or is refused as before the GC threshold -- never a state with versions missing."""
    import threading

    clock = Clock()
    engine = open_lsm(str(tmp_path / "db"), gc_ttl=1.0, clock=clock, background_processes=False, **SMALL)
    states: list = []
    done = threading.Event()
    failures: list = []

    def writer() -> None:
        rng, model = random.Random(21), {}
        try:
            for _ in range(400):
                clock.now += 0.01
                ops = _random_ops(rng)
                engine.write(to_batch(ops))
                apply_ops(model, ops)
                states.append((clock.now, dict(model)))
        finally:
            done.set()

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        while not done.is_set() or rng.random() < 0.9:
            if not states:
                continue
            when, expected = states[rng.randrange(len(states))]
            try:
                with engine.snapshot_as_of(when) as snap:
                    got = user_state(snap)
            except OperationalError as exc:
                if "GC threshold" not in str(exc):
                    failures.append(str(exc))
                continue
            if got != expected:
                failures.append(f"state at {when - START:.2f}s differs")
            if done.is_set():
                break

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(s,)) for s in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    engine.close()
    assert failures == []
