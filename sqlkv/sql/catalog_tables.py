"""The catalog as read-only SQL tables, and the text SHOW CREATE TABLE prints.

``SELECT * FROM sqlkv_internal.namespace`` scans the namespace system table (ID 1:
``/Table/1/1/<name>`` -> the descriptor id) of the statement's transaction;
``sqlkv_internal.descriptors`` scans the descriptor table (ID 2: ``/Table/2/1/<id>`` -> the
msgpack descriptor, shown as JSON); ``sqlkv_internal.sequences`` the counters of ID 3 (the
descriptor id allocator); ``sqlkv_internal.timeline`` the commit times of system table 4 that
AS OF SYSTEM TIME maps to seqs (sqlkv.storage.history); ``sqlkv_internal.create_statements`` renders each table or
view as the CREATE statement that makes it again (what ``SHOW CREATE TABLE t`` selects). They
are virtual tables (`sqlkv.sql.virtual`): nothing is stored, the rows come from the KV store when
the scan runs, and writing to them is refused like any virtual table.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterator

import msgpack

from sqlkv.catalog.catalog import DESCRIPTOR_TABLE_ID, NAMESPACE_TABLE_ID, SEQUENCE_TABLE_ID
from sqlkv.catalog.descriptors import TableDescriptor, ViewDescriptor
from sqlkv.encoding.keys import decode_value, index_prefix
from sqlkv.encoding.pretty import pretty_key
from sqlkv.errors import CorruptionError
from sqlkv.sql.schema_text import column_sql, foreign_key_sql, implicit_pk, key_list
from sqlkv.sql.schema_text import quote_ident as quote
from sqlkv.sql.types import INT, TEXT, TIMESTAMP
from sqlkv.storage.history import timeline_samples
from sqlkv.storage.kv import prefix_end

SCHEMAS = {
    "sqlkv_internal.namespace": [("name", TEXT), ("id", INT), ("key", TEXT)],
    "sqlkv_internal.descriptors": [("id", INT), ("name", TEXT), ("kind", TEXT), ("descriptor", TEXT), ("key", TEXT)],
    "sqlkv_internal.create_statements": [("table_name", TEXT), ("kind", TEXT), ("create_statement", TEXT)],
    "sqlkv_internal.sequences": [("name", TEXT), ("value", TEXT), ("key", TEXT)],
    "sqlkv_internal.timeline": [("commit_time", TIMESTAMP), ("seq", INT)],
    # ANALYZE's figures (system table 6): one row per index and prefix of its key columns
    "sqlkv_internal.table_statistics": [
        ("table_name", TEXT), ("index_name", TEXT), ("index_id", INT), ("column_count", INT),
        ("column_names", TEXT), ("row_count", INT), ("distinct_count", INT), ("null_count", INT),
        ("created", TIMESTAMP),
    ],
}


def selected_tables(catalog, only: str | None) -> list[TableDescriptor]:
    """All user tables, or just the one named (``WHERE table_name = 'x'`` is pushed down to
    the virtual tables that list tables: information_schema's, ``sqlkv_internal.table_stats``)."""
    if only is None:
        return catalog.list_tables()
    t = catalog.find_table(only) if "." not in only else None
    return [t] if t is not None and t.name == only else []


def _system_rows(catalog, table_id: int) -> Iterator[tuple[bytes, object, object]]:
    """(raw key, decoded key column, decoded value) of a system table's primary index."""
    prefix = index_prefix(table_id, 1)
    for key, data in catalog.txn.scan(prefix, prefix_end(prefix)):
        try:
            column, _desc, _end = decode_value(bytes(key), len(prefix))
            value = msgpack.unpackb(data, strict_map_key=False)
        except (ValueError, msgpack.UnpackException) as exc:
            raise CorruptionError(f"system table {table_id}: undecodable entry {pretty_key(key)}: {exc}") from None
        yield bytes(key), column, value


def namespace_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    for key, name, desc_id in _system_rows(catalog, NAMESPACE_TABLE_ID):
        if only is None or name == only:
            yield (name, desc_id, pretty_key(key))


def descriptor_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    for key, desc_id, data in _system_rows(catalog, DESCRIPTOR_TABLE_ID):
        name = data.get("name") if isinstance(data, dict) else None
        if only is not None and name != only:
            continue
        kind = data.get("kind", "table") if isinstance(data, dict) else None
        yield (desc_id, name, kind, json.dumps(data, sort_keys=True, default=_json_default), pretty_key(key))


def sequence_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    """The counters of system table 3 (the descriptor id allocator, ...), values as JSON."""
    for key, name, value in _system_rows(catalog, SEQUENCE_TABLE_ID):
        if only is None or name == only:
            yield (str(name), json.dumps(value, default=_json_default), pretty_key(key))


def timeline_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    """The samples still kept: commit time (local, as now() gives it) and the batch seq."""
    for micros, seq in timeline_samples(catalog.txn):
        yield (_dt.datetime.fromtimestamp(micros / 1_000_000), seq)


def _json_default(v: object) -> object:
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


def create_statement_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    descriptors = catalog.list_descriptors()
    tables = {d.id: d for d in descriptors if isinstance(d, TableDescriptor)}
    sequences = {d.name: d for d in descriptors if getattr(d, "kind", None) == "sequence"}
    for desc in descriptors:
        if only is not None and desc.name != only:
            continue
        if isinstance(desc, ViewDescriptor):
            yield (desc.name, "view", f"CREATE VIEW {quote(desc.name)} AS {desc.query_sql}")
        elif isinstance(desc, TableDescriptor):
            yield (desc.name, "table", create_table_sql(desc, sequences, tables))


def key_column_label(t: TableDescriptor, column_id: int) -> str:
    """An index key column as SHOW INDEXES names it: an expression index's expression."""
    col = t.column_by_id(column_id)
    return col.computed if col.hidden and col.computed is not None else col.name


def statistics_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    """The stored statistics of each analyzed table: per index, its entries and the distinct
    values of each prefix of its key columns (``null_count``: entries whose first is NULL);
    then per column no index leads, its (estimated) distinct values, index NULL."""
    for t in selected_tables(catalog, only):
        stats = catalog.statistics(t.id)
        if stats is None:
            continue
        created = _dt.datetime.fromtimestamp(round(stats.at, 3))
        for idx in t.all_indexes():
            figures = stats.indexes.get(idx.id)
            if figures is None:
                continue  # inverted, or created since the last ANALYZE
            names = [key_column_label(t, c) for c in idx.column_ids]
            for n, distinct in enumerate(figures.distinct[:len(names)], start=1):
                yield (t.name, idx.name, idx.id, n, ", ".join(names[:n]), figures.entries, distinct,
                       figures.nulls if n == 1 else None, created)
        for col in t.columns:  # the columns no index leads: sketched distinct values
            figures = stats.columns.get(col.id)
            if figures is not None:
                yield (t.name, None, None, 1, col.name, stats.rows, figures.distinct, figures.nulls, created)


PRODUCERS = {
    "sqlkv_internal.table_statistics": statistics_rows,
    "sqlkv_internal.namespace": namespace_rows,
    "sqlkv_internal.descriptors": descriptor_rows,
    "sqlkv_internal.create_statements": create_statement_rows,
    "sqlkv_internal.sequences": sequence_rows,
    "sqlkv_internal.timeline": timeline_rows,
}


def create_table_sql(t: TableDescriptor, sequences: dict, tables: dict[int, TableDescriptor]) -> str:
    """``CREATE TABLE`` text that recreates ``t``: columns (generated, identity, defaults),
    the primary key, every index (expression keys as their expressions), foreign keys,
    families, checks. ``sequences`` by name and ``tables`` by id resolve identity options
    and referenced tables."""
    lines = [column_sql(t, c, sequences) for c in t.columns if not c.hidden]
    pk = t.primary_index
    if not implicit_pk(t):
        lines.append(f"CONSTRAINT {quote(pk.name)} PRIMARY KEY ({key_list(t, pk)})")
    for idx in t.indexes:
        if _made_by_foreign_key(t, idx):
            continue  # the FOREIGN KEY below creates it again
        kind = "UNIQUE " if idx.unique else "INVERTED " if idx.inverted else ""
        text = f"{kind}INDEX {quote(idx.name)} ({key_list(t, idx)})"
        if idx.storing:
            text += " STORING (" + ", ".join(quote(t.column_by_id(c).name) for c in idx.storing) + ")"
        if idx.predicate:
            text += f" WHERE {idx.predicate}"
        lines.append(text)
    lines.extend(foreign_key_sql(t, fk, tables) for fk in t.foreign_keys)
    for fam in t.families:
        cols = ", ".join(quote(t.column_by_id(c).name) for c in fam.column_ids)
        layout = " WITH (layout = exploded)" if fam.exploded else ""
        lines.append(f"FAMILY {quote(fam.name)} ({cols}){layout}")
    for chk in t.checks:
        lines.append(f"CONSTRAINT {quote(chk.name)} CHECK ({chk.expr_sql})")
    body = ",\n  ".join(lines)
    return f"CREATE TABLE {quote(t.name)} (\n  {body}\n)"


def _made_by_foreign_key(t: TableDescriptor, idx) -> bool:
    """The index a foreign key created for its referencing columns (``<t>_auto_index_<fk>``)."""
    return any(idx.name.endswith(f"_auto_index_{fk.name}") and list(idx.column_ids) == list(fk.column_ids)
               and not idx.unique and not idx.storing and not idx.predicate for fk in t.foreign_keys)
