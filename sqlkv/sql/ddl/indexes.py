"""CREATE INDEX (with the backfill of existing rows) and DROP INDEX."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import index_prefix
from sqlkv.errors import (
    ConditionFailedError,
    DuplicateTable,
    NotSupportedError,
    ProgrammingError,
    SqlSyntaxError,
    UndefinedObject,
    UniqueViolation,
)
from sqlkv.sql.print_arrows import ARROWS
from sqlkv.sql.context import ExecContext
from sqlkv.sql.ddl import index_ingest
from sqlkv.sql.ddl.foreign_keys import refuse_index_drop
from sqlkv.sql.ddl.inverted import INVERTED_METHODS, backfill_inverted, check_inverted_form, wants_inverted
from sqlkv.sql.ddl.generated import drop_unused_expression_columns, expression_column, immutable_expression
from sqlkv.sql.ddl.names import copy_table, ident, new_name, qualified_name, refuse_virtual
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.index import IndexCodec, unique_violation
from sqlkv.storage.kv import prefix_end

_NULLS_ORDER = re.compile(r"\bNULLS\s+(FIRST|LAST)\b", re.IGNORECASE)


_ORDERED_METHODS = ("BTREE", "PREFIX", "LSM")


def _refuse_index_clauses(stmt: ParsedStatement, params: Any, table: str) -> None:
    """CREATE INDEX clauses sqlkv does not implement are errors, never no-ops."""
    ast = stmt.ast
    if ast.args.get("concurrently"):
        raise NotSupportedError(f'CREATE INDEX CONCURRENTLY is not supported (index on "{table}")')
    if params is None:
        return
    using = params.args.get("using")
    if using is not None and ident(using).upper() not in (*_ORDERED_METHODS, *INVERTED_METHODS):
        raise NotSupportedError(f'index method USING {ident(using).upper()} is not supported '
                                "(only ordered indexes, and GIN / INVERTED on ARRAY and JSONB columns)")
    if params.args.get("with_storage"):
        raise NotSupportedError(f"storage parameters WITH (...) on an index are not supported (index on \"{table}\")")
    if params.args.get("tablespace") is not None:
        raise NotSupportedError(f'TABLESPACE is not supported (index on "{table}")')
    if params.args.get("include"):
        raise NotSupportedError(f'INCLUDE is not supported here; use STORING (...) (index on "{table}")')
    if _NULLS_ORDER.search(stmt.sql):
        raise NotSupportedError(
            f'NULLS FIRST/LAST in an index is not supported: NULLs sort first in ascending keys (index on "{table}")'
        )


# -- indexes -----------------------------------------------------------------------------------


def create_index(stmt: ParsedStatement, catalog, env) -> None:
    ast = stmt.ast
    index = ast.this
    if not isinstance(index, exp.Index) or index.args.get("table") is None:
        raise SqlSyntaxError("syntax error: expected CREATE INDEX name ON table (columns)")
    if ast.args.get("replace"):
        raise NotSupportedError("CREATE OR REPLACE INDEX is not supported; DROP INDEX IF EXISTS first")
    tname = qualified_name(index.args["table"])
    refuse_virtual(tname, catalog, "index")
    table = catalog.get_table(tname)
    if table.virtual is not None:
        raise ProgrammingError(f'cannot index virtual table "{table.name}"')
    table = copy_table(table)
    params = index.args.get("params")
    _refuse_index_clauses(stmt, params, table.name)
    cols_nodes = params.args.get("columns") if params is not None else None
    if not cols_nodes:
        raise ProgrammingError("CREATE INDEX needs a column list")
    if wants_inverted(stmt, params):
        _create_inverted(stmt, catalog, env, table, cols_nodes, params)
        return
    cols = []
    desc = []
    shown = []  # the names in the default index name: a column's, or an expression's function
    for o in cols_nodes:
        inner = o.this if isinstance(o, exp.Ordered) else o
        if isinstance(inner, exp.Column):
            cols.append(table.column(inner.name))
            shown.append(cols[-1].name)
        else:
            inner = inner.unnest()  # ((n * 2)) is n * 2, as a query writes it
            cols.append(expression_column(table, inner, env))
            # an operator is "expr", as PostgreSQL names it (the JSONB arrows are Func nodes to sqlglot)
            named = isinstance(inner, exp.Func) and not isinstance(inner, exp.Anonymous) and type(inner) not in ARROWS
            shown.append(inner.sql_name().lower() if named
                         else str(inner.this).lower() if isinstance(inner, exp.Anonymous) else "expr")
        desc.append(bool(o.args.get("desc")) if isinstance(o, exp.Ordered) else False)
    if len({c.id for c in cols}) != len(cols):
        raise ProgrammingError("index lists a column twice")
    iname = new_name(index.this, "index") if index.this is not None else _auto_name(
        f"{table.name}_{'_'.join(shown)}_idx", catalog, stmt)
    if not _name_free(iname, catalog, stmt):
        return
    storing = []
    for sname in stmt.storing:
        col = table.column(sname)
        if col.id in [c.id for c in cols] or col.id in table.primary_index.column_ids:
            continue
        storing.append(col.id)
    unique = bool(ast.args.get("unique"))
    where = params.args.get("where")
    predicate = _index_predicate(where.this, table, env) if where is not None else None
    idx = IndexDescriptor(table.next_index_id, iname, [c.id for c in cols], desc, unique, storing, predicate)
    # bulk backfill by SSTable ingestion (index_ingest.py): ordered indexes only (one entry per row)
    if (params is None or params.args.get("using") is None) and index_ingest.applies(env.ctx, catalog):
        index_ingest.build_by_ingest(table, idx, catalog, env.ctx)
        return
    table.next_index_id += 1
    table.indexes.append(idx)
    catalog.update(table)
    backfill_index(table, idx, env.ctx)


def _create_inverted(stmt: ParsedStatement, catalog, env, table: TableDescriptor, cols_nodes, params) -> None:
    col_id = check_inverted_form(table, cols_nodes, stmt, params, bool(stmt.ast.args.get("unique")))
    index = stmt.ast.this
    col_name = table.column_by_id(col_id).name
    iname = new_name(index.this, "index") if index.this is not None else _auto_name(
        f"{table.name}_{col_name}_idx", catalog, stmt)
    if not _name_free(iname, catalog, stmt):
        return
    idx = IndexDescriptor(table.next_index_id, iname, [col_id], [False], inverted=True)
    table.next_index_id += 1
    table.indexes.append(idx)
    catalog.update(table)
    backfill_inverted(table, idx, env.ctx)


def _auto_name(base: str, catalog, stmt: ParsedStatement) -> str:
    """A generated index name: ``base``, else ``base1``, ``base2``... as PostgreSQL numbers them
    (two indexes on expressions are both ``t_expr_idx`` at first). With IF NOT EXISTS ``base``
    itself, so that a repeated statement finds its index and does nothing."""
    taken = {i.name.lower() for other in catalog.list_tables() for i in other.all_indexes()}
    if stmt.ast.args.get("exists") or base.lower() not in taken:
        return base
    n = 1
    while f"{base}{n}".lower() in taken:
        n += 1
    return f"{base}{n}"


def _name_free(iname: str, catalog, stmt: ParsedStatement) -> bool:
    """False when IF NOT EXISTS meets an index of that name; an error without IF NOT EXISTS."""
    for other in catalog.list_tables():
        if other.find_index(iname) is not None:
            if stmt.ast.args.get("exists"):
                return False
            raise DuplicateTable(f'index "{iname}" already exists')
    return True


def _index_predicate(node: exp.Expression, table: TableDescriptor, env) -> str:
    """The SQL text of a partial index's WHERE, checked: immutable, over this table's columns."""
    return immutable_expression(node, table, env, "a partial index predicate", f'index on "{table.name}"')[0]


def table_rows(table: TableDescriptor, txn):
    codec = codec_for(table)
    return codec.decode_rows(txn.scan(codec.prefix, prefix_end(codec.prefix)))


def backfill_index(table: TableDescriptor, idx: IndexDescriptor, ctx: ExecContext) -> None:
    if idx.inverted:
        backfill_inverted(table, idx, ctx)
        return
    codec = codec_for(table)
    ic = IndexCodec(table, idx, codec.pk_positions)
    txn = ctx.txn
    # Streams the primary index: the entries written go to another key range, which the
    # transaction's merged scan tolerates (it re-positions after buffer changes). They are
    # written a chunk of rows at a time, so it re-positions once per chunk, not once per row.
    chunk: list[tuple] = []
    with ctx.progress(f'indexing "{table.name}" ({idx.name})') as wrap:
        for row in wrap(table_rows(table, txn), label="rows"):
            if ic.holds(row):
                chunk.append(row)
                if len(chunk) == _BACKFILL_CHUNK:
                    _write_entries(table, idx, ic, txn, chunk, ctx)
                    chunk = []
    _write_entries(table, idx, ic, txn, chunk, ctx)


_BACKFILL_CHUNK = 512


def _write_entries(table: TableDescriptor, idx: IndexDescriptor, ic: IndexCodec, txn, rows: list[tuple],
                   ctx: ExecContext) -> None:
    ctx.check_cancelled()
    for row in rows:
        _write_entry(table, idx, ic, txn, row)


def _write_entry(table: TableDescriptor, idx: IndexDescriptor, ic: IndexCodec, txn, row: tuple) -> None:
    key, value, conditional = ic.entry(row)
    if not conditional:
        txn.put(key, value)
        return
    try:
        txn.put_if_absent(key, value)
    except ConditionFailedError:
        raise unique_violation(table, idx, ic, row) from None


def drop_index(ast: exp.Drop, catalog) -> None:
    for node in ast.expressions if ast.expressions else ast.args.get("tables") or []:
        iname = qualified_name(node)
        owner = None
        for table in catalog.list_tables():
            idx = table.find_index(iname)
            if idx is not None:
                owner = (table, idx)
                break
        if owner is None:
            if ast.args.get("exists"):
                continue
            raise UndefinedObject(f'index "{iname}" does not exist')
        table, idx = owner
        if idx is table.primary_index:
            raise ProgrammingError(f'cannot drop the primary key index "{iname}" of table "{table.name}"')
        refuse_index_drop(table, idx, catalog)
        table.indexes = [i for i in table.indexes if i.id != idx.id]
        drop_unused_expression_columns(table)
        catalog.update(table)
        start = index_prefix(table.id, idx.id)
        catalog.txn.delete_range(start, prefix_end(start))
