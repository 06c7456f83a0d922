"""Storage engines: the KV interface (`kv`), the in-memory engine (`memory`) and the LSM engine (`lsm`).

`open_engine` is the single entry point the layers above use to get an engine for a database name.
"""

from __future__ import annotations

from typing import Any

from sqlkv.storage.kv import Engine, KVReader, Snapshot, WriteBatch, prefix_end
from sqlkv.storage.memory import MemoryEngine


def open_engine(database: str, **options: Any) -> Engine:
    """``":memory:"`` gives a fresh MemoryEngine; anything else is an LSM database directory.

    Options (LSM): ``durability`` ("full" | "normal" | "off"), ``cache_size`` (bytes),
    ``memtable_size`` (bytes), ``read_only``.
    """
    if database == ":memory:":
        return MemoryEngine()
    from sqlkv.storage.lsm import open_lsm  # imported lazily: the LSM pulls in threads and files

    return open_lsm(database, **options)


__all__ = ["Engine", "KVReader", "Snapshot", "WriteBatch", "prefix_end", "MemoryEngine", "open_engine"]
