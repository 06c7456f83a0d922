"""Virtual tables: information_schema.tables/columns/indexes/index_columns/check_constraints/views,
sqlkv_internal.kv and the figure tables (engine_stats, latencies, compactions, statement_stats, ...).

``SELECT * FROM information_schema.columns WHERE table_name = 'users'`` resolves, through
`Catalog.find_table`, to a virtual `TableDescriptor` whose ``virtual`` callable produces rows
from the catalog when the scan runs (``VirtualScan``); the query engine filters them like any
other rows. ``sqlkv_internal.kv`` lists every KV pair of the user tables: table name, index
name, the key in key grammar with names (``/users/users_pkey/10/0``), the raw key bytes, and
the decoded value as text (a row value's map, an index value's list, or empty).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlkv.catalog.descriptors import ColumnDescriptor, IndexDescriptor, TableDescriptor
from sqlkv.sql import catalog_tables
from sqlkv.sql.catalog_tables import key_column_label, selected_tables
from sqlkv.sql.observe import PRODUCERS as OBSERVE_PRODUCERS
from sqlkv.sql.observe import SCHEMAS as OBSERVE_SCHEMAS
from sqlkv.sql.rowstore.display import names_lookup, table_pairs
from sqlkv.sql.types import BOOL, BYTES, INT, TEXT

_SCHEMAS = {
    "information_schema.tables": [("table_name", TEXT), ("table_type", TEXT), ("table_id", INT)],
    "information_schema.columns": [
        ("table_name", TEXT),
        ("column_name", TEXT),
        ("ordinal_position", INT),
        ("data_type", TEXT),
        ("is_nullable", TEXT),
        ("column_default", TEXT),
        ("is_hidden", BOOL),
        ("is_identity", TEXT),  # YES: the value is assigned (SERIAL, INTEGER PRIMARY KEY, rowid, IDENTITY)
        # PostgreSQL's names: what a driver's get_columns reads for computed and identity columns
        ("is_generated", TEXT),  # ALWAYS (a generated column) | NEVER
        ("generation_expression", TEXT),
        ("identity_generation", TEXT),  # ALWAYS | BY DEFAULT for GENERATED ... AS IDENTITY, else NULL
    ],
    "information_schema.indexes": [
        ("table_name", TEXT),
        ("index_name", TEXT),
        ("index_id", INT),
        ("is_unique", BOOL),
        ("is_primary", BOOL),
        ("column_names", TEXT),
        ("storing_names", TEXT),
        ("predicate", TEXT),  # a partial index's WHERE, else NULL
        ("index_type", TEXT),  # btree | inverted (ARRAY / JSONB elements; rowstore/inverted.py)
    ],
    # constraints as PostgreSQL and MySQL expose them (table_name first: see selected_tables), so a
    # driver's get_pk_constraint / get_unique_constraints / get_foreign_keys can read them
    "information_schema.table_constraints": [
        ("table_name", TEXT),
        ("constraint_name", TEXT),
        ("constraint_type", TEXT),  # PRIMARY KEY | UNIQUE | FOREIGN KEY | CHECK
    ],
    "information_schema.key_column_usage": [
        ("table_name", TEXT),
        ("constraint_name", TEXT),
        ("column_name", TEXT),
        ("ordinal_position", INT),
        ("referenced_table_name", TEXT),  # MySQL's columns: the referenced column, in FK order
        ("referenced_column_name", TEXT),
    ],
    "information_schema.referential_constraints": [
        ("table_name", TEXT),
        ("constraint_name", TEXT),
        ("referenced_table_name", TEXT),
        ("unique_constraint_name", TEXT),
        ("match_option", TEXT),
        ("update_rule", TEXT),
        ("delete_rule", TEXT),
    ],
    # one row per key column and STORING column of each index, in key order
    "information_schema.index_columns": [
        ("table_name", TEXT),
        ("index_name", TEXT),
        ("ordinal_position", INT),
        ("column_name", TEXT),
        ("is_descending", BOOL),
        ("is_storing", BOOL),
    ],
    "information_schema.check_constraints": [
        ("table_name", TEXT),
        ("constraint_name", TEXT),
        ("check_clause", TEXT),
    ],
    "information_schema.views": [("table_name", TEXT), ("view_definition", TEXT)],
    "sqlkv_internal.kv": [
        ("table_name", TEXT),
        ("index_name", TEXT),
        ("key", TEXT),
        ("raw_key", BYTES),
        ("value", TEXT),
    ],
}


def virtual_table(name: str, catalog) -> TableDescriptor | None:
    lname = name.lower()
    schema = _SCHEMAS.get(lname)
    if schema is None:
        return None
    cols = [ColumnDescriptor(i + 1, n, t) for i, (n, t) in enumerate(schema)]
    desc = TableDescriptor(
        id=0,
        name=lname,
        columns=cols,
        primary_index=IndexDescriptor(1, "primary", [1], [False]),
        next_column_id=len(cols) + 1,
    )
    producer = _PRODUCERS[lname]
    desc.virtual = lambda ctx, only=None, cat=catalog: producer(ctx.catalog or cat, only)
    return desc


def _tables(catalog, only: str | None = None) -> Iterator[tuple]:
    for d in catalog.list_descriptors():
        if only is not None and d.name != only:
            continue
        yield (d.name, {"view": "VIEW", "sequence": "SEQUENCE"}.get(d.kind, "BASE TABLE"), d.id)


def _columns(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for i, c in enumerate(t.columns):
            generated = c.computed is not None
            yield (t.name, c.name, i + 1, c.type.sql(), "YES" if c.nullable else "NO",
                   None if c.identity else c.default_sql, c.hidden,
                   "YES" if c.auto_increment or c.identity else "NO",
                   "ALWAYS" if generated else "NEVER", c.computed, c.identity)


def _indexes(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for idx in t.all_indexes():
            names = []
            for cid, desc in zip(idx.column_ids, idx.descending):
                names.append(key_column_label(t, cid) + (" DESC" if desc else ""))
            storing = ", ".join(t.column_by_id(c).name for c in idx.storing)
            yield (t.name, idx.name, idx.id, idx.unique or idx.id == 1, idx.id == 1, ", ".join(names), storing,
                   idx.predicate, "inverted" if idx.inverted else "btree")


def _key_constraints(t: TableDescriptor) -> Iterator[tuple[str, str, list[int]]]:
    for idx in t.all_indexes():
        if idx.id == 1 and not any(t.column_by_id(c).hidden for c in idx.column_ids):
            yield idx.name, "PRIMARY KEY", idx.column_ids
        elif idx.id != 1 and idx.unique and idx.predicate is None:
            yield idx.name, "UNIQUE", idx.column_ids


def _table_constraints(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for name, kind, _cols in _key_constraints(t):
            yield (t.name, name, kind)
        for fk in t.foreign_keys:
            yield (t.name, fk.name, "FOREIGN KEY")
        for chk in t.checks:
            yield (t.name, chk.name, "CHECK")


def _key_column_usage(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for name, _kind, cols in _key_constraints(t):
            for i, cid in enumerate(cols):
                yield (t.name, name, t.column_by_id(cid).name, i + 1, None, None)
        for fk in t.foreign_keys:
            parent = catalog.table_by_id(fk.ref_table_id)
            for i, (cid, rid) in enumerate(zip(fk.column_ids, fk.ref_column_ids)):
                yield (t.name, fk.name, t.column_by_id(cid).name, i + 1, parent.name if parent else None,
                       parent.column_by_id(rid).name if parent else None)


def _referential_constraints(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for fk in t.foreign_keys:
            parent = catalog.table_by_id(fk.ref_table_id)
            unique = None
            if parent is not None:
                unique = next((n for n, _k, cols in _key_constraints(parent)
                               if sorted(cols) == sorted(fk.ref_column_ids)), None)
            yield (t.name, fk.name, parent.name if parent else None, unique, "NONE", fk.on_update, fk.on_delete)
def _index_columns(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for idx in t.all_indexes():
            keys = [(cid, desc, False) for cid, desc in zip(idx.column_ids, idx.descending)]
            for pos, (cid, desc, storing) in enumerate(keys + [(c, False, True) for c in idx.storing]):
                yield (t.name, idx.name, pos + 1, t.column_by_id(cid).name, desc, storing)


def _check_constraints(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in selected_tables(catalog, only):
        for check in t.checks:
            yield (t.name, check.name, check.expr_sql)


def _views(catalog, only: str | None = None) -> Iterator[tuple]:
    for v in catalog.list_views():
        if only is None or v.name == only:
            yield (v.name, v.query_sql)


def kv_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    """(table, index, pretty key, raw key, value text) for every KV pair of the user tables."""
    tables = selected_tables(catalog, only)
    names = names_lookup({t.id: t for t in tables})
    for t in tables:
        for iname, pretty, key, value in table_pairs(catalog.txn, t, names):
            yield (t.name, iname, pretty, key, value)


_PRODUCERS = {
    "information_schema.tables": _tables,
    "information_schema.columns": _columns,
    "information_schema.indexes": _indexes,
    "information_schema.table_constraints": _table_constraints,
    "information_schema.key_column_usage": _key_column_usage,
    "information_schema.referential_constraints": _referential_constraints,
    "information_schema.index_columns": _index_columns,
    "information_schema.check_constraints": _check_constraints,
    "information_schema.views": _views,
    "sqlkv_internal.kv": kv_rows,
}
# sqlkv_internal.namespace / descriptors / sequences / create_statements live in
# catalog_tables.py, the figure tables (engine_stats, statement_stats, ...) in observe.py.
_SCHEMAS.update(catalog_tables.SCHEMAS)
_PRODUCERS.update(catalog_tables.PRODUCERS)
_SCHEMAS.update(OBSERVE_SCHEMAS)
_PRODUCERS.update(OBSERVE_PRODUCERS)
