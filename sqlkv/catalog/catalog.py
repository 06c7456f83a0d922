"""The catalog: table and view descriptors stored in system tables of the same KV store.

``CREATE TABLE users (...)`` inside a transaction ends here as three writes, all buffered in
that transaction like any row write (so a ROLLBACK makes the table vanish):

- the id counter ``/Table/3/1/"descriptor_id"`` is read and bumped (read-modify-write: two
  concurrent CREATEs conflict under OCC and one retries);
- the namespace entry ``/Table/1/1/"users"`` -> ``[104]``;
- the descriptor ``/Table/2/1/104`` -> msgpack of `TableDescriptor.to_dict`.

A later ``SELECT ... FROM users`` asks `Catalog.get_table("users")`. Descriptors are cached
per `Database` in a `DescriptorCache` whose entries are valid for one schema version; every
committed DDL bumps the version through ``txn.on_commit``. A transaction that has itself
changed the schema reads descriptors from the KV store (its own buffered writes) instead.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import msgpack

from sqlkv.catalog.descriptors import TableDescriptor, ViewDescriptor, descriptor_from_dict
from sqlkv.catalog.statistics import TableStatistics, delete_statistics, read_statistics
from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.errors import ProgrammingError, UndefinedTable
from sqlkv.storage.kv import prefix_end

NAMESPACE_TABLE_ID = 1
DESCRIPTOR_TABLE_ID = 2
SEQUENCE_TABLE_ID = 3
FIRST_USER_TABLE_ID = 100

_NAMESPACE = index_prefix(NAMESPACE_TABLE_ID, 1)
_DESCRIPTORS = index_prefix(DESCRIPTOR_TABLE_ID, 1)
_SEQUENCES = index_prefix(SEQUENCE_TABLE_ID, 1)
_ID_COUNTER_KEY = _SEQUENCES + encode_key(["descriptor_id"])
# The namespace and descriptor tables: a schema change writes here (`DescriptorCache.sync`).
SCHEMA_SPAN = (_NAMESPACE, prefix_end(_DESCRIPTORS))

Descriptor = TableDescriptor | ViewDescriptor


class DescriptorCache:
    """Descriptors by lower-cased name, valid for one schema version (shared per Database)."""

    def __init__(self) -> None:
        self.version = 0
        self.by_name: dict[str, Descriptor | None] = {}
        self.statistics: dict[int, TableStatistics | None] = {}  # by table id (statistics.py)
        self.lock = threading.Lock()
        self.synced_seq = 0  # shared engines: other clients' schema changes up to here are seen
        # The cached descriptors describe the schema of snapshots at or after this seq: an
        # older transaction (its snapshot predates the last schema change) must neither read
        # nor fill the cache, or a later writer would plan with a descriptor missing an index.
        self.valid_from = 0

    def sync(self, txn: Any) -> None:
        """On a shared engine (etcd), drop the cache when another client changed the schema.

        Local commits bump the cache themselves; other processes' DDL is found by asking the
        transaction's snapshot whether a namespace or descriptor key changed since the last
        check (one round trip per transaction, none when the snapshot is not newer).
        """
        seen = self.synced_seq
        if txn.snapshot_seq <= seen:
            return
        if txn.changed_since(*SCHEMA_SPAN, seen):
            self.bump(txn.snapshot_seq)  # the change is at or before this snapshot
        with self.lock:
            self.synced_seq = max(self.synced_seq, txn.snapshot_seq)

    def bump(self, changed_at: int = 0) -> None:
        """Drop every cached descriptor: the schema changed at seq ``changed_at`` (or before)."""
        with self.lock:
            self.version += 1
            self.by_name = {}
            self.statistics = {}
            self.valid_from = max(self.valid_from, changed_at)

    def version_serving(self, snapshot_seq: int) -> int:
        """The cache version a transaction reading at ``snapshot_seq`` may use, or -1 when its
        snapshot is older than the schema the cache holds."""
        with self.lock:
            return self.version if snapshot_seq >= self.valid_from else -1


def namespace_key(name: str) -> bytes:
    return _NAMESPACE + encode_key([name.lower()])


def descriptor_key(desc_id: int) -> bytes:
    return _DESCRIPTORS + encode_key([desc_id])


class Catalog:
    """Descriptor reads and writes bound to one transaction."""

    def __init__(self, txn: Any, cache: DescriptorCache | None = None,
                 virtual_tables: Callable[[str, Catalog], TableDescriptor | None] | None = None) -> None:
        self.txn = txn
        if cache is not None and getattr(txn, "shared", False):
            cache.sync(txn)
        self.cache = cache
        # -1 matches no cache version: descriptors (and plans) are then read from this snapshot
        self.cache_version = cache.version_serving(txn.snapshot_seq) if cache is not None else -1
        self.dirty = False  # this transaction changed the schema: bypass the shared cache
        self._touched: set[int] = set()
        # schema-qualified names (information_schema.x, sqlkv_internal.x) are the SQL layer's
        # virtual tables: it passes the resolver, as the catalog sits below it
        self.virtual_tables = virtual_tables

    # -- reads ---------------------------------------------------------------------------

    def _lookup(self, name: str) -> Descriptor | None:
        lname = name.lower()
        return self._cached("by_name", lname, self._read)

    def _cached(self, store: str, key: Any, read: Callable[[Any], Any]) -> Any:
        """``read(key)``, through the shared cache's dict ``store`` when this transaction may
        use it (its snapshot is as new as the cache, and it changed no schema itself)."""
        cache = self.cache
        use_cache = cache is not None and not self.dirty and cache.version == self.cache_version
        if use_cache and key in getattr(cache, store):
            return getattr(cache, store)[key]
        value = read(key)
        if use_cache:
            with cache.lock:  # type: ignore[union-attr]
                if cache.version == self.cache_version:  # type: ignore[union-attr]
                    getattr(cache, store)[key] = value
        return value

    def _read(self, lname: str) -> Descriptor | None:
        raw = self.txn.get(namespace_key(lname))
        if raw is None:
            return None
        desc_id = msgpack.unpackb(raw)
        data = self.txn.get(descriptor_key(desc_id))
        if data is None:
            return None
        return descriptor_from_dict(msgpack.unpackb(data, strict_map_key=False))

    def find_table(self, name: str) -> TableDescriptor | None:
        if "." in name and self.virtual_tables is not None:
            return self.virtual_tables(name, self)
        desc = self._lookup(name)
        return desc if isinstance(desc, TableDescriptor) else None

    def get_table(self, name: str) -> TableDescriptor:
        desc = self.find_table(name)
        if desc is None:
            found = self._lookup(name)
            if isinstance(found, ViewDescriptor):
                raise ProgrammingError(f'"{name}" is a view, not a table')
            if found is not None:
                raise ProgrammingError(f'"{name}" is a {found.kind}, not a table')
            raise UndefinedTable(f'relation "{name}" does not exist')
        return desc

    def find_sequence(self, name: str):
        """The SequenceDescriptor named ``name``, or None."""
        if "." in name:
            return None
        desc = self._lookup(name)
        return desc if getattr(desc, "kind", None) == "sequence" else None

    def get_view(self, name: str) -> ViewDescriptor | None:
        if "." in name:
            return None
        desc = self._lookup(name)
        return desc if isinstance(desc, ViewDescriptor) else None

    def find_any(self, name: str) -> Descriptor | None:
        return self._lookup(name)

    def list_descriptors(self) -> list[Descriptor]:
        out = []
        end = prefix_end(_DESCRIPTORS)
        for _key, data in self.txn.scan(_DESCRIPTORS, end):
            desc = descriptor_from_dict(msgpack.unpackb(data, strict_map_key=False))
            if desc.id < FIRST_USER_TABLE_ID:
                # an index once created on a virtual table wrote its descriptor under id 0;
                # no real table or view has such an id, so it is skipped, never listed
                continue
            out.append(desc)
        return sorted(out, key=lambda d: d.name)

    def list_tables(self) -> list[TableDescriptor]:
        return [d for d in self.list_descriptors() if isinstance(d, TableDescriptor)]

    def list_views(self) -> list[ViewDescriptor]:
        return [d for d in self.list_descriptors() if isinstance(d, ViewDescriptor)]

    def statistics(self, table_id: int) -> TableStatistics | None:
        """The table's ANALYZE figures (None when never analyzed), cached like descriptors."""
        return self._cached("statistics", table_id, self._read_statistics)

    def _read_statistics(self, table_id: int) -> TableStatistics | None:
        """Read outside a writing transaction's read set (a fresh read-only snapshot): they are
        hints, and a concurrent ANALYZE must not make the writer's commit fail. A transaction
        that wrote statistics itself (``dirty``) reads its own."""
        txn = self.txn
        if txn.read_only or self.dirty:
            return read_statistics(txn, table_id)
        reader = txn.manager.begin(read_only=True)
        try:
            return read_statistics(reader, table_id)
        finally:
            reader.rollback()

    def note_statistics(self) -> None:
        """New statistics were written in this transaction: plans made with the old ones (in
        every session) are made again once it commits, as after a schema change."""
        self._schema_changed()

    def table_by_id(self, table_id: int) -> TableDescriptor | None:
        data = self.txn.get(descriptor_key(table_id))
        if data is None:
            return None
        desc = descriptor_from_dict(msgpack.unpackb(data, strict_map_key=False))
        return desc if isinstance(desc, TableDescriptor) else None

    def touch(self, table_id: int) -> None:
        """Record a read of a table's descriptor in this transaction (once).

        Plans and the descriptor cache skip the KV store, so a statement writing into a table
        calls this: a concurrent DROP/ALTER that commits first then makes this transaction
        fail its commit (SerializationFailure) instead of writing rows into a dropped table.
        """
        if table_id not in self._touched:
            self._touched.add(table_id)
            self.txn.get(descriptor_key(table_id))

    # -- writes --------------------------------------------------------------------------

    def _schema_changed(self) -> None:
        if not self.dirty:
            self.dirty = True
            if self.cache is not None:
                txn, cache = self.txn, self.cache
                self.txn.on_commit(lambda: cache.bump(txn.commit_seq or 0))

    def allocate_id(self) -> int:
        raw = self.txn.get(_ID_COUNTER_KEY)
        next_id = FIRST_USER_TABLE_ID if raw is None else msgpack.unpackb(raw)
        self.txn.put(_ID_COUNTER_KEY, msgpack.packb(next_id + 1))
        return next_id

    def create(self, desc: Descriptor) -> None:
        """Register a new table or view; the caller checked the name is free."""
        self._schema_changed()
        self.txn.put(namespace_key(desc.name), msgpack.packb(desc.id))
        self.txn.put(descriptor_key(desc.id), msgpack.packb(desc.to_dict()))

    def update(self, desc: Descriptor, old_name: str | None = None) -> None:
        """Store a changed descriptor (bumping a table's version); handle renames."""
        self._schema_changed()
        if isinstance(desc, TableDescriptor):
            desc.version += 1
        if old_name is not None and old_name.lower() != desc.name.lower():
            self.txn.delete(namespace_key(old_name))
            self.txn.put(namespace_key(desc.name), msgpack.packb(desc.id))
        self.txn.put(descriptor_key(desc.id), msgpack.packb(desc.to_dict()))

    def remove(self, desc: Descriptor) -> None:
        self._schema_changed()
        self.txn.delete(namespace_key(desc.name))
        self.txn.delete(descriptor_key(desc.id))
        if isinstance(desc, TableDescriptor):
            delete_statistics(self.txn, desc.id)

    def name_taken(self, name: str) -> bool:
        return self._lookup(name) is not None
