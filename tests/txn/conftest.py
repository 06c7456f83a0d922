"""Engines for the transaction tests: the memory engine always, the LSM engine when it imports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sqlkv.storage.kv import Engine
from sqlkv.storage.memory import MemoryEngine
from sqlkv.txn import TxnManager


def _lsm_opener():
    try:
        from sqlkv.storage.lsm import open_lsm
    except Exception:  # noqa: BLE001 - missing or mid-edit: the parametrisation is skipped
        return None
    return open_lsm


def _open_lsm(path: str) -> Engine:
    open_lsm = _lsm_opener()
    try:
        return open_lsm(path, durability="off")  # type: ignore[misc]
    except TypeError:
        return open_lsm(path)  # type: ignore[misc]


@pytest.fixture(params=["memory", "lsm"])
def engine(request: pytest.FixtureRequest, tmp_path) -> Iterator[Engine]:
    if request.param == "memory":
        eng: Engine = MemoryEngine()
    else:
        if _lsm_opener() is None:
            pytest.skip("sqlkv.storage.lsm is not importable yet")
        eng = _open_lsm(str(tmp_path / "db"))
    try:
        yield eng
    finally:
        eng.close()


@pytest.fixture
def manager(engine: Engine) -> TxnManager:
    return TxnManager.for_engine(engine)


@pytest.fixture
def mem_engine() -> MemoryEngine:
    return MemoryEngine()


@pytest.fixture
def mem_manager(mem_engine: MemoryEngine) -> TxnManager:
    # The manager holds the engine weakly: the mem_engine fixture keeps it alive.
    return TxnManager.for_engine(mem_engine)
