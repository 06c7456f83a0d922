"""Storage engines: the KV interface (`kv`), the in-memory engine (`memory`) and the LSM engine (`lsm`).

`open_engine` is the single entry point the layers above use to get an engine for a database name.
"""

from __future__ import annotations

from typing import Any

from sqlkv.storage.kv import Engine, KVReader, Snapshot, WriteBatch, prefix_end
from sqlkv.storage.memory import MemoryEngine


def open_engine(database: str, create: bool = True, **options: Any) -> Engine:
    """``":memory:"`` gives a fresh MemoryEngine; ``etcd://host:port[,...]/name`` a database
    in an etcd cluster (`sqlkv.storage.etcd`); anything else is an LSM database directory.

    ``create``: a missing path or an empty directory becomes a new database (never when
    ``read_only``); a directory holding other files is refused either way.
    Options (LSM): ``durability`` ("full" | "normal" | "off"), ``cache_size`` (bytes),
    ``memtable_size`` (bytes), ``read_only``.
    """
    if database == ":memory:":
        return MemoryEngine()
    if database.startswith("etcd://"):
        # a cluster shared with other clients; its client is imported only for etcd:// URLs
        from sqlkv.storage.etcd import open_etcd

        return open_etcd(database, create=create, **options)
    # imported only when a directory is opened: the LSM pulls in threads, files and workers
    from sqlkv.storage.lsm import open_lsm
    from sqlkv.storage.lsm.probe import probe_directory

    probe_directory(database, create and not options.get("read_only", False))
    return open_lsm(database, **options)


__all__ = ["Engine", "KVReader", "Snapshot", "WriteBatch", "prefix_end", "MemoryEngine", "open_engine"]
