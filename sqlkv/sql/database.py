"""`Database`: one open database -- its engine, transaction manager and descriptor cache.

``sqlkv.connect("shop.db")`` and ``sqlkv shop.db`` end in ``Database.open("shop.db")``. Within
one process every connection to a path must share more than the engine: one `TxnManager`
(serializable conflict checks only see transactions it knows about) and one `DescriptorCache`
(a committed DDL bumps the schema version all sessions compare their cached plans with). The
LSM engine's own registry shares only the store, so the databases are kept here, keyed by real
path and reference counted. ``":memory:"`` is always a fresh, private database.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from sqlkv.catalog.catalog import SCHEMA_SPAN, DescriptorCache
from sqlkv.catalog.pending_builds import collect_abandoned
from sqlkv.storage import open_engine
from sqlkv.storage.history import DEFAULT_GC_TTL
from sqlkv.txn import TxnManager


class Database:
    """One open database (an engine + transaction manager + descriptor cache)."""

    _registry: dict[str, Database] = {}
    _registry_lock = threading.Lock()

    def __init__(self, path: str, engine, key: str | None) -> None:
        self.path = path
        self.engine = engine
        self.txn_manager = TxnManager.for_engine(engine)
        self.descriptors = DescriptorCache()
        watch = getattr(engine, "watch_span", None)
        if engine.shared and watch is not None:
            watch(*SCHEMA_SPAN)  # the schema-cache check then rides on each snapshot's round trip
        # a read-only database refuses writing statements when they run, not at COMMIT
        self.read_only = engine.read_only
        self._key = key
        self._refs = 1
        self.closed = False

    @property
    def schema_version(self) -> int:
        return self.descriptors.version

    @classmethod
    def open(cls, path: str = ":memory:", **options: Any) -> Database:
        """Open (or share) the database at ``path``; ``":memory:"`` is always a fresh one.

        ``gc_ttl`` (seconds) defaults to `DEFAULT_GC_TTL` except on etcd: the window of
        history ``AS OF SYSTEM TIME`` can read (sqlkv.storage.history)."""
        if not path.startswith("etcd://"):
            options.setdefault("gc_ttl", DEFAULT_GC_TTL)
        if path == ":memory:":
            return cls(path, open_engine(path, **options), None)
        key = os.path.realpath(path)
        with cls._registry_lock:
            db = cls._registry.get(key)
            if db is not None and not db.closed:
                db._refs += 1
                return db
            db = cls(path, open_engine(path, **options), key)
            if not db.engine.shared:
                collect_abandoned(db.txn_manager, db.read_only)  # left by a CREATE INDEX killed mid-build
            cls._registry[key] = db
            return db

    def close(self) -> None:
        with self._registry_lock:
            if self.closed:
                return
            self._refs -= 1
            if self._refs > 0:
                return
            self.closed = True
            if self._key is not None and self._registry.get(self._key) is self:
                del self._registry[self._key]
        self.engine.close()

