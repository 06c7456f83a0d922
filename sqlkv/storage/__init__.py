"""Storage engines: the KV interface (`kv`), the in-memory engine (`memory`) and the LSM engine (`lsm`).

`open_engine` is the single entry point the layers above use to get an engine for a database name.
"""

from __future__ import annotations

from typing import Any

from sqlkv.errors import NotSupportedError
from sqlkv.storage.history import check_gc_ttl
from sqlkv.storage.kv import Engine, KVReader, Snapshot, WriteBatch, prefix_end
from sqlkv.storage.memory import MemoryEngine


def open_engine(database: str, create: bool = True, **options: Any) -> Engine:
    """``":memory:"`` gives a fresh MemoryEngine; ``etcd://host:port[,...]/name`` a database
    in an etcd cluster (`sqlkv.storage.etcd`); anything else is an LSM database directory.

    ``create``: a missing path or an empty directory becomes a new database (never when
    ``read_only``); a directory holding other files is refused either way.
    Options (LSM): ``durability`` ("full" | "normal" | "off"), ``cache_size`` (bytes),
    ``memtable_size`` (bytes), ``read_only``; (LSM and memory) ``gc_ttl``, the seconds of
    history ``AS OF SYSTEM TIME`` can read (default 0: off; `Database.open` defaults it to 600; not on etcd), and ``clock``.
    """
    if database == ":memory:":
        history = {k: options[k] for k in ("gc_ttl", "clock") if k in options}
        if "gc_ttl" in history:
            history["gc_ttl"] = check_gc_ttl(history["gc_ttl"])
        return MemoryEngine(**history)
    if database.startswith("etcd://"):
        # a cluster shared with other clients; its client is imported only for etcd:// URLs
        from sqlkv.storage.etcd import open_etcd

        options.pop("clock", None)
        if check_gc_ttl(options.pop("gc_ttl", 0)):
            raise NotSupportedError("gc_ttl (time travel, AS OF SYSTEM TIME) is not supported on etcd: "
                                    "sqlkv keeps no timeline of etcd revisions; leave gc_ttl unset or 0")

        return open_etcd(database, create=create, **options)
    # imported only when a directory is opened: the LSM pulls in threads, files and workers
    from sqlkv.storage.lsm import open_lsm
    from sqlkv.storage.lsm.probe import probe_directory

    probe_directory(database, create and not options.get("read_only", False))
    return open_lsm(database, **options)


__all__ = ["Engine", "KVReader", "Snapshot", "WriteBatch", "prefix_end", "MemoryEngine", "open_engine"]
