"""CREATE INVERTED INDEX / CREATE INDEX ... USING GIN: the checks and the backfill.

Only the forms sqlkv implements are accepted: one plain column of an ARRAY or JSONB type,
ascending, not UNIQUE, no STORING, no WHERE. Everything else is a clear error rather than a
silently ordinary (or silently partial) index.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import ExecContext
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.inverted import EMPTY_LIST, InvertedCodec, inverted_column_kind
from sqlkv.storage.kv import prefix_end

INVERTED_METHODS = ("GIN", "INVERTED")
_BACKFILL_CHUNK = 512


def wants_inverted(stmt, params) -> bool:
    """CREATE INVERTED INDEX, or USING GIN / USING INVERTED."""
    using = params.args.get("using") if params is not None else None
    method = (using.name if isinstance(using, exp.Identifier) else str(using.this)).upper() if using is not None else ""
    if stmt.inverted and method and method not in INVERTED_METHODS:
        raise ProgrammingError(f"CREATE INVERTED INDEX cannot use USING {method}")
    return stmt.inverted or method in INVERTED_METHODS


def check_inverted_form(table: TableDescriptor, cols_nodes: list, stmt, params, unique: bool) -> int:
    """The column id an inverted index covers, after refusing every form sqlkv does not build."""
    where = f'(inverted index on "{table.name}")'
    if unique:
        raise NotSupportedError(f"an inverted index cannot be UNIQUE {where}")
    if stmt.storing:
        raise NotSupportedError(f"an inverted index cannot STORE columns {where}")
    if params.args.get("where") is not None:
        raise NotSupportedError(f"a partial inverted index (WHERE ...) is not supported {where}")
    if len(cols_nodes) != 1:
        raise NotSupportedError(f"an inverted index covers exactly one column {where}")
    node = cols_nodes[0]
    if isinstance(node, exp.Ordered) and node.args.get("desc"):
        raise NotSupportedError(f"an inverted index column cannot be DESC {where}")
    inner = node.this if isinstance(node, exp.Ordered) else node
    if not isinstance(inner, exp.Column):
        raise NotSupportedError(f"an inverted index on an expression is not supported {where}")
    col = table.column(inner.name)
    if inverted_column_kind(col.type.kind, col.type.element is not None) is None:
        raise ProgrammingError(
            f'column "{col.name}" of type {col.type.sql()} cannot be indexed by an inverted index: '
            f"only ARRAY and JSONB columns can {where}"
        )
    return col.id


def backfill_inverted(table: TableDescriptor, idx: IndexDescriptor, ctx: ExecContext) -> None:
    """The entries of every existing row, written a chunk of rows at a time."""
    codec = codec_for(table)
    inv = InvertedCodec(table, idx, codec.pk_positions)
    txn = ctx.txn
    rows = codec.decode_rows(txn.scan(codec.prefix, prefix_end(codec.prefix)))
    keys: list[bytes] = []
    with ctx.progress(f'indexing "{table.name}" ({idx.name})') as wrap:
        for n, row in enumerate(wrap(rows, label="rows"), 1):
            keys.extend(inv.keys(row))
            if n % _BACKFILL_CHUNK == 0:
                _write(txn, keys, ctx)
                keys = []
    _write(txn, keys, ctx)


def _write(txn, keys: list[bytes], ctx: ExecContext) -> None:
    ctx.check_cancelled()
    for key in sorted(keys):
        txn.put(key, EMPTY_LIST)
