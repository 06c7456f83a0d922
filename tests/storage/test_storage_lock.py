"""One writing process per database directory, readers beside it; within a process, opens
share one engine."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from sqlkv.errors import InterfaceError, OperationalError
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import open_lsm

PROBE = textwrap.dedent(
    """
    import sys
    from sqlkv.errors import DatabaseLockedError
    from sqlkv.storage.lsm import open_lsm
    try:
        open_lsm(sys.argv[1], read_only=sys.argv[2] == "ro").close()
        print("opened")
    except DatabaseLockedError as exc:
        print("locked:", exc)
    """
)


def _probe(path: str, mode: str = "rw") -> str:
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    result = subprocess.run([sys.executable, "-c", PROBE, path, mode], capture_output=True, env=env,
                            text=True, timeout=60)
    return result.stdout.strip() or result.stderr


def _put(engine, key: bytes, value: bytes) -> None:
    batch = WriteBatch()
    batch.put(key, value)
    engine.write(batch)


def test_second_process_is_locked_out(tmp_path):
    path = str(tmp_path / "db")
    engine = open_lsm(path)
    try:
        out = _probe(path)
        assert out == f"locked: database {os.path.realpath(path)} is locked by another process"
        assert _probe(path, "ro") == "opened"  # readers open beside the writer (WAL mode)
    finally:
        engine.close()
    assert _probe(path) == "opened"


def test_readers_do_not_lock_out_readers_or_the_writer(tmp_path):
    path = str(tmp_path / "db")
    open_lsm(path).close()
    reader = open_lsm(path, read_only=True)
    try:
        assert _probe(path, "ro") == "opened"
        assert _probe(path, "rw") == "opened"
        with pytest.raises(OperationalError, match="read-only"):
            _put(reader, b"k", b"v")
    finally:
        reader.close()


def test_same_process_shares_one_engine(tmp_path):
    path = str(tmp_path / "db")
    first = open_lsm(path)
    second = open_lsm(os.path.join(str(tmp_path), ".", "db"))
    _put(first, b"k", b"v1")
    assert second.get(b"k") == b"v1"
    first.close()
    first.close()  # idempotent: must not release the other handle's reference
    with pytest.raises(InterfaceError):
        first.get(b"k")
    _put(second, b"k", b"v2")
    assert second.get(b"k") == b"v2"
    assert _probe(path).startswith("locked:")
    second.close()
    assert _probe(path) == "opened"
    third = open_lsm(path)
    try:
        assert third.get(b"k") == b"v2"
    finally:
        third.close()


def test_read_only_open_of_missing_directory(tmp_path):
    with pytest.raises(OperationalError, match="does not exist"):
        open_lsm(str(tmp_path / "missing"), read_only=True)


def test_bad_durability_is_rejected(tmp_path):
    with pytest.raises(InterfaceError, match="durability"):
        open_lsm(str(tmp_path / "db"), durability="sometimes")
    assert not os.path.exists(tmp_path / "db")  # rejected before touching the disk


def test_unknown_option_is_rejected(tmp_path):
    with pytest.raises(InterfaceError, match="unknown LSM option.*memtable_sise"):
        open_lsm(str(tmp_path / "db"), memtable_sise=1)


def test_an_open_racing_the_last_close_waits_for_it(tmp_path):
    """The last handle's close gives the LOCK file back only at its end; an open of the same
    path in another thread meanwhile must wait for it, not report the database as locked."""
    import threading

    path = str(tmp_path / "db")
    errors: list[BaseException] = []

    def open_and_close(rounds: int) -> None:
        try:
            for _ in range(rounds):
                engine = open_lsm(path, durability="off")
                batch = WriteBatch()
                batch.put(b"k", b"v")
                engine.write(batch)
                engine.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_and_close, args=(40,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
