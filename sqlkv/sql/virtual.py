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
        ("is_identity", TEXT),  # YES: the value is assigned (SERIAL, INTEGER PRIMARY KEY, rowid)
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


def _catalog_tables() -> None:
    """sqlkv_internal.namespace / descriptors / create_statements (sqlkv/sql/catalog_tables.py)."""
    from sqlkv.sql import catalog_tables
    _SCHEMAS.update(catalog_tables.SCHEMAS)
    _PRODUCERS.update(catalog_tables.PRODUCERS)


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


def _selected(catalog, only: str | None) -> list[TableDescriptor]:
    """All tables, or just the one named (``WHERE table_name = 'x'`` is pushed down)."""
    if only is None:
        return catalog.list_tables()
    t = catalog.find_table(only) if "." not in only else None
    return [t] if t is not None and t.name == only else []


def _tables(catalog, only: str | None = None) -> Iterator[tuple]:
    for d in catalog.list_descriptors():
        if only is not None and d.name != only:
            continue
        yield (d.name, "VIEW" if d.kind == "view" else "BASE TABLE", d.id)


def _columns(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in _selected(catalog, only):
        for i, c in enumerate(t.columns):
            yield (t.name, c.name, i + 1, c.type.sql(), "YES" if c.nullable else "NO", c.default_sql, c.hidden,
                   "YES" if c.auto_increment else "NO")


def _indexes(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in _selected(catalog, only):
        for idx in t.all_indexes():
            names = []
            for cid, desc in zip(idx.column_ids, idx.descending):
                names.append(t.column_by_id(cid).name + (" DESC" if desc else ""))
            storing = ", ".join(t.column_by_id(c).name for c in idx.storing)
            yield (t.name, idx.name, idx.id, idx.unique or idx.id == 1, idx.id == 1, ", ".join(names), storing,
                   idx.predicate)


def _index_columns(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in _selected(catalog, only):
        for idx in t.all_indexes():
            keys = [(cid, desc, False) for cid, desc in zip(idx.column_ids, idx.descending)]
            for pos, (cid, desc, storing) in enumerate(keys + [(c, False, True) for c in idx.storing]):
                yield (t.name, idx.name, pos + 1, t.column_by_id(cid).name, desc, storing)


def _check_constraints(catalog, only: str | None = None) -> Iterator[tuple]:
    for t in _selected(catalog, only):
        for check in t.checks:
            yield (t.name, check.name, check.expr_sql)


def _views(catalog, only: str | None = None) -> Iterator[tuple]:
    for v in catalog.list_views():
        if only is None or v.name == only:
            yield (v.name, v.query_sql)


def kv_rows(catalog, only: str | None = None) -> Iterator[tuple]:
    """(table, index, pretty key, raw key, value text) for every KV pair of the user tables."""
    tables = _selected(catalog, only)
    names = names_lookup({t.id: t for t in tables})
    for t in tables:
        for iname, pretty, key, value in table_pairs(catalog.txn, t, names):
            yield (t.name, iname, pretty, key, value)


_PRODUCERS = {
    "information_schema.tables": _tables,
    "information_schema.columns": _columns,
    "information_schema.indexes": _indexes,
    "information_schema.index_columns": _index_columns,
    "information_schema.check_constraints": _check_constraints,
    "information_schema.views": _views,
    "sqlkv_internal.kv": kv_rows,
}
_catalog_tables()

# The figure tables (engine_stats, statement_stats, ...) live in observe.py.
_SCHEMAS.update(OBSERVE_SCHEMAS)
_PRODUCERS.update(OBSERVE_PRODUCERS)
