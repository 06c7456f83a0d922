"""Connections dropped without close() are closed, and never hang the process doing it.

The cyclic garbage collector may finalize a forgotten connection in the middle of sqlkv code
that holds the locks close() needs; a CI run once hung for good that way inside
``Database.open`` (the registry lock was held while the collector ran the old connection's
``__del__``)."""

from __future__ import annotations

import gc
import threading
import time

import sqlkv
from sqlkv.sql.database import Database
from sqlkv.storage.lsm import engine as lsm_engine


def _wait_until(condition, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def _all_closed() -> bool:
    """No database and no LSM store is open in this process any more."""
    return not Database._registry and not lsm_engine._registry


def _abandon_in_a_cycle(path: str) -> None:
    conn = sqlkv.connect(path)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")  # an open transaction, never committed
    conn.cycle = conn  # only the cyclic collector can free it


def test_a_collection_under_the_registry_lock_does_not_deadlock(tmp_path) -> None:
    path = str(tmp_path / "db")
    gc.disable()  # the collection must happen below, under the lock, not earlier
    try:
        _abandon_in_a_cycle(path)
        finished = threading.Event()

        def collect_under_the_lock() -> None:
            with Database._registry_lock:  # as Database.open holds it
                gc.collect()
            finished.set()

        worker = threading.Thread(target=collect_under_the_lock, daemon=True)
        worker.start()
        assert finished.wait(60), "the collector's close() deadlocked on the registry lock"
    finally:
        gc.enable()
    # the reaper closed it: the database is no longer open in this process
    assert _wait_until(_all_closed), (Database._registry, lsm_engine._registry)
    conn = sqlkv.connect(path)  # and its uncommitted transaction was rolled back
    assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").fetchone() == (0,)
    conn.close()


def test_a_connection_dropped_by_reference_counting_closes_at_once(tmp_path) -> None:
    path = str(tmp_path / "db")
    conn = sqlkv.connect(path)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.commit()
    del conn
    assert _all_closed()


def test_a_connection_dropped_on_another_thread_is_closed(tmp_path) -> None:
    path = str(tmp_path / "db")
    holder = [sqlkv.connect(path)]
    threading.Thread(target=holder.clear).start()  # the last reference goes on another thread
    assert _wait_until(_all_closed), (Database._registry, lsm_engine._registry)
