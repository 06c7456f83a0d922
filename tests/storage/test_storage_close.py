"""close() does not wait for background work: an in-flight flush or compaction is aborted,
its partial output removed, and a reopen recovers every write (from the WAL) and the tables."""

from __future__ import annotations

import glob
import os
import threading
import time

from sqlkv.storage.kv import WriteBatch
import pytest

from sqlkv.storage.lsm import open_lsm, worker
from tests.storage.conftest import model_scan

GATE_AT = 5000  # entries the gated job reads before it parks until close() begins


def _gate_thread(monkeypatch, thread_name: str) -> tuple[threading.Event, list]:
    """Make the background thread ``thread_name`` park mid-job until its store starts closing.

    Returns an event set once it is parked, and a one-slot list the test fills with the core.
    """
    real = worker.gc_entries
    parked = threading.Event()
    holder: list = []

    def gated(entries, *args):
        if threading.current_thread().name != thread_name:
            return real(entries, *args)

        def slow():
            for i, entry in enumerate(entries):
                if i == GATE_AT:
                    parked.set()
                    deadline = time.monotonic() + 60
                    while not holder[0].closing and time.monotonic() < deadline:
                        time.sleep(0.001)
                yield entry
        return real(slow(), *args)

    monkeypatch.setattr(worker, "gc_entries", gated)
    return parked, holder


def _gate_worker(monkeypatch, tmp_path, job: str) -> tuple[threading.Event, list]:
    """The same gate for builds in worker processes: workers run tests/storage/worker_gate.py,
    which parks every job (until killed) after GATE_AT entries and says so with a file."""
    marker = str(tmp_path / "parked")
    monkeypatch.setenv("SQLKV_TEST_PARKED", marker)
    monkeypatch.setenv("SQLKV_TEST_GATE", job)
    monkeypatch.setattr(worker, "WORKER_COMMAND", "import tests.storage.worker_gate")
    monkeypatch.setattr(worker, "MIN_WORKER_BYTES", 0)
    parked = threading.Event()

    def watch():
        deadline = time.monotonic() + 60
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.005)
        if os.path.exists(marker):
            parked.set()

    threading.Thread(target=watch, daemon=True).start()
    return parked, []


def _gate(processes: bool, monkeypatch, tmp_path, thread_name: str) -> tuple[threading.Event, list]:
    if processes:
        return _gate_worker(monkeypatch, tmp_path, "flush" if thread_name.endswith("flush") else "compact")
    return _gate_thread(monkeypatch, thread_name)


def _write(engine, model: dict, keys: range, tag: bytes) -> None:
    batch = WriteBatch()
    for i in keys:
        key, value = b"key%06d" % i, tag + b"%06d" % i + b"x" * 60
        batch.put(key, value)
        model[key] = value
    engine.write(batch)


def _table_files(path) -> set[int]:
    return {int(os.path.basename(p)[:-4]) for p in glob.glob(os.path.join(str(path), "*.sst"))}


def _build_files(path) -> list[str]:
    build = os.path.join(str(path), worker.BUILD_DIR)
    return os.listdir(build) if os.path.isdir(build) else []


def _check_model(path, model: dict) -> None:
    engine = open_lsm(str(path), background_processes=False)  # not through a gated worker
    try:
        assert list(engine.scan(b"", None)) == model_scan(model, b"", None, False, None)
        engine.compact()
        assert list(engine.scan(b"", None, reverse=True)) == model_scan(model, b"", None, True, None)
    finally:
        engine.close()


@pytest.mark.parametrize("processes", [False, True], ids=["thread", "worker"])
def test_close_aborts_in_flight_flush(tmp_path, monkeypatch, processes):
    db = tmp_path / "db"
    parked, holder = _gate(processes, monkeypatch, tmp_path, "sqlkv-lsm-flush")
    engine = open_lsm(str(db), durability="normal", memtable_size=64 << 20,
                      background_processes=processes)
    core = engine._core
    assert not processes or core.builder.prestart()
    holder.append(core)
    model: dict = {}
    for start in range(0, 12000, 1000):
        _write(engine, model, range(start, start + 1000), b"a")
    flusher = threading.Thread(target=engine.flush)  # rotates, then waits for the flush
    flusher.start()
    assert parked.wait(30), "the flush never reached the gate"
    _write(engine, model, range(500, 1500), b"b")  # writes go on into the new memtable
    engine.close()
    flusher.join(30)
    assert not flusher.is_alive()
    assert core.stats_counters["flushes_aborted"] == 1
    assert core.stats_counters["flushes"] == 0
    assert _table_files(db) == set()  # the half-written table is gone
    assert _build_files(db) == []
    _check_model(db, model)


@pytest.mark.parametrize("processes", [False, True], ids=["thread", "worker"])
def test_close_aborts_in_flight_compaction(tmp_path, monkeypatch, processes):
    db = tmp_path / "db"
    parked, holder = _gate(processes, monkeypatch, tmp_path, "sqlkv-lsm-compaction")
    engine = open_lsm(str(db), durability="normal", memtable_size=64 << 20, l0_trigger=2,
                      background_processes=processes)
    core = engine._core
    assert not processes or core.builder.prestart()
    holder.append(core)
    model: dict = {}
    _write(engine, model, range(0, 6000), b"a")
    engine.flush()
    _write(engine, model, range(3000, 9000), b"b")
    engine.flush()  # two L0 tables: the compaction thread starts merging them
    assert parked.wait(30), "the compaction never reached the gate"
    live = {t.number for level in core.version.levels for t in level}
    _write(engine, model, range(100, 200), b"c")
    engine.close()
    assert core.stats_counters["compactions_aborted"] == 1
    assert core.stats_counters["compactions"] == 0
    assert _table_files(db) == live  # inputs kept, partial outputs removed
    assert _build_files(db) == []
    _check_model(db, model)


def test_stray_table_from_a_crash_mid_flush_is_ignored(tmp_path):
    engine = open_lsm(str(tmp_path), durability="normal")
    model: dict = {}
    _write(engine, model, range(0, 100), b"a")
    engine.close()
    stray = os.path.join(str(tmp_path), "999999.sst")
    with open(stray, "wb") as f:
        f.write(b"half a table" * 100)
    _check_model(tmp_path, model)
    assert not os.path.exists(stray)


def test_close_aborts_a_compact_call_in_another_thread(tmp_path, monkeypatch):
    from sqlkv.errors import InterfaceError

    parked, holder = _gate_thread(monkeypatch, "compact-caller")
    engine = open_lsm(str(tmp_path), durability="normal", memtable_size=64 << 20, l0_trigger=50,
                      background_processes=False)  # the gate is in this process
    holder.append(engine._core)
    model: dict = {}
    _write(engine, model, range(0, 6000), b"a")
    engine.flush()
    _write(engine, model, range(3000, 9000), b"b")
    errors: list = []

    def compact() -> None:
        try:
            engine.compact()
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            errors.append(exc)

    caller = threading.Thread(target=compact, name="compact-caller")
    caller.start()
    assert parked.wait(30), "compact() never reached the gate"
    engine.close()
    caller.join(30)
    assert not caller.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], InterfaceError), errors
    _check_model(tmp_path, model)
