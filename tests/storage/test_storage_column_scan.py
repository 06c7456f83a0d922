"""`scan_columns` (storage/lsm/column_scan.py): a forward scan handed out as ``(keys, values)``
lists must hold exactly the lazy scan's pairs, in order, for every shape of the LSM -- one
source, a level and a memtable of scattered updates and deletes (the two-source merge), an
older snapshot that sees only some versions, range tombstones and three or more sources (the
transposed general merge) -- and in lists of at least the size asked for, none empty."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from sqlkv.errors import InterfaceError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import column_scan, open_lsm
from sqlkv.storage.memory import MemoryEngine
from tests.storage.conftest import SMALL, apply_ops, model_scan, to_batch

SPANS = [(b"k", None), (b"k00017", b"k00455"), (b"k00599", b"k1"), (b"k00300", b"k00301"), (b"z", None)]


def _key(i: int) -> bytes:
    return b"k%05d" % i


def _write(engine, keys, tag: bytes) -> None:
    batch = WriteBatch()
    for i in keys:
        batch.put(_key(i), tag + b"%05d" % i)
    engine.write(batch)


def _delete(engine, keys) -> None:
    batch = WriteBatch()
    for i in keys:
        batch.delete(_key(i))
    engine.write(batch)


def _check_columns(snap, start: bytes, end: bytes | None) -> None:
    whole = list(snap.scan(start, end))
    for size in (1, 7, 64, 100, 1000):
        lists = list(snap.scan_columns(start, end, size))
        assert all(keys and len(keys) == len(values) for keys, values in lists)
        assert all(len(keys) >= size for keys, _values in lists[:-1])
        pairs = [pair for keys, values in lists for pair in zip(keys, values)]
        assert pairs == whole, (start, end, size)


def _check_all(engine, snaps) -> None:
    for snap in snaps:
        for start, end in SPANS:
            _check_columns(snap, start, end)


@pytest.fixture
def engine(tmp_path):
    engine = open_lsm(str(tmp_path), durability="off", **SMALL)
    yield engine
    engine.close()


def _merges(monkeypatch) -> list[int]:
    """Count the two-source merges, so the tests show which path they took."""
    calls: list[int] = []
    merge = column_scan._merge_two

    def counted(*args):
        calls.append(1)
        return (yield from merge(*args))

    monkeypatch.setattr(column_scan, "_merge_two", counted)
    return calls


def test_one_compacted_source(engine, monkeypatch) -> None:
    merges = _merges(monkeypatch)
    _write(engine, range(600), b"old")
    engine.flush()
    engine.compact()
    with engine.snapshot() as snap:
        _check_all(engine, [snap])
    assert not merges


def test_a_level_and_a_memtable_of_scattered_updates_and_deletes(engine, monkeypatch) -> None:
    merges = _merges(monkeypatch)
    _write(engine, range(600), b"old")
    engine.flush()
    engine.compact()
    old = engine.snapshot()
    _write(engine, range(0, 600, 7), b"new")  # keys in both sources: the newest wins
    _delete(engine, range(3, 600, 11))  # tombstones hide the table's versions
    _write(engine, [600, 601, 1000], b"add")  # keys only the memtable holds, one past the table
    middle = engine.snapshot()
    _write(engine, range(0, 600, 5), b"newer")  # versions `middle` must not see
    latest = engine.snapshot()
    try:
        _check_all(engine, [old, middle, latest])
    finally:
        for snap in (old, middle, latest):
            snap.close()
    assert merges  # the two-source path ran


def test_range_tombstones_and_many_sources_take_the_general_merge(engine, monkeypatch) -> None:
    _write(engine, range(600), b"old")
    engine.flush()
    engine.compact()
    _write(engine, range(0, 600, 4), b"l0a")
    engine.flush()
    _write(engine, range(1, 600, 4), b"l0b")
    engine.flush()
    _write(engine, range(2, 600, 9), b"mem")
    with engine.snapshot() as many:
        _check_all(engine, [many])
    batch = WriteBatch()
    batch.delete_range(_key(100), _key(250))
    engine.write(batch)
    with engine.snapshot() as tombs:
        _check_all(engine, [tombs])


def test_an_empty_range_and_a_closed_snapshot(engine) -> None:
    _write(engine, range(600), b"v")
    engine.flush()
    engine.compact()
    snap = engine.snapshot()
    assert list(snap.scan_columns(b"k00010", b"k00010", 10)) == []
    assert list(snap.scan_columns(b"x", None, 10)) == []
    reading = snap.scan_columns(b"k", None, 10)
    next(reading)
    snap.close()
    with pytest.raises(InterfaceError):
        next(reading)
    with pytest.raises(InterfaceError):
        list(snap.scan_columns(b"k", None, 10))


def test_the_default_transposes_the_range_reader() -> None:
    engine = MemoryEngine()
    _write(engine, range(300), b"v")
    _delete(engine, range(0, 300, 3))
    with engine.snapshot() as snap:
        for start, end in SPANS:
            _check_columns(snap, start, end)


KEYS = st.integers(0, 120).map(_key)
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), KEYS, st.binary(max_size=6)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("range"), KEYS, KEYS),
), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(OPS, st.sampled_from(["none", "flush", "compact"]), st.booleans()), min_size=1,
                max_size=8))
def test_columns_equal_the_model_for_any_history(tmp_path_factory, steps) -> None:
    engine = open_lsm(str(tmp_path_factory.mktemp("cols")), durability="off", **SMALL)
    model: dict = {}
    snaps = []
    try:
        for ops, then, keep in steps:
            ops = [op for op in ops if op[0] != "range" or op[1] < op[2]]
            if ops:
                engine.write(to_batch(ops))
                apply_ops(model, ops)
            if then == "flush":
                engine.flush()
            elif then == "compact":
                engine.compact()
            if keep:
                snaps.append((engine.snapshot(), dict(model)))
        snaps.append((engine.snapshot(), dict(model)))
        rng = random.Random(len(steps))
        for snap, seen in snaps:
            size = rng.choice([1, 3, 16, 500])
            lists = list(snap.scan_columns(b"k", None, size))
            assert [p for keys, values in lists for p in zip(keys, values)] == model_scan(seen, b"k", None, False, None)
            assert all(len(keys) >= size for keys, _values in lists[:-1]) and all(keys for keys, _v in lists)
    finally:
        for snap, _seen in snaps:
            snap.close()
        engine.close()


def _splices(monkeypatch) -> list[int]:
    calls: list[int] = []
    splice = column_scan._splice

    def counted(*args):
        calls.append(1)
        return splice(*args)

    monkeypatch.setattr(column_scan, "_splice", counted)
    return calls


@pytest.mark.parametrize("seed", range(4))
def test_memtable_writes_spliced_into_big_blocks(tmp_path, monkeypatch, seed: int) -> None:
    """Blocks of hundreds of keys (the default block size) and a memtable of scattered
    updates, deletes, inserts between the table's keys and before and after them, keys
    written several times (versions an older snapshot must not see) -- more than a memtable
    page per block, so the memtable's pages end inside a block: spliced, the pairs are
    the lazy scan's at every snapshot."""
    splices = _splices(monkeypatch)
    rng = random.Random(seed)
    engine = open_lsm(str(tmp_path), durability="off")
    try:
        _write(engine, range(10, 6000, 2), b"old")
        engine.flush()
        engine.compact()
        snaps = [engine.snapshot()]
        for _round in range(3):
            batch = WriteBatch()
            for i in rng.sample(range(6100), 700):
                if rng.random() < 0.3:
                    batch.delete(_key(i))
                else:
                    batch.put(_key(i), b"r%d-%05d" % (_round, i))
            engine.write(batch)
            snaps.append(engine.snapshot())
        for snap in snaps:
            for start, end in [(b"k", None), (b"k00011", b"k03001"), (b"k02000", b"k02002")]:
                _check_columns(snap, start, end)
    finally:
        for snap in snaps:
            snap.close()
        engine.close()
    assert splices
