"""ALTER TABLE ... ALTER [COLUMN] c (SET/DROP DEFAULT, SET/DROP NOT NULL, [SET DATA] TYPE)
and CockroachDB's ALTER TABLE ... ALTER PRIMARY KEY USING COLUMNS (...).

``ALTER TABLE t ALTER COLUMN n TYPE TEXT USING n::text`` on ``t(id INT PRIMARY KEY, n INT)``
reads every row of ``t`` (a scan of ``/Table/<t>/1``), computes the new value (the USING
expression, else the old value cast strictly, as an INSERT would: a lossy conversion is a
DataError naming the column and the value), then -- because the stored encoding of the value
changes with its type -- deletes each row's old KV pairs and index entries and writes the new
ones (the primary key too when ``n`` is a key column), all in the statement's transaction.
A change that keeps the encoding (``VARCHAR(10)`` -> ``VARCHAR(20)``, ``INT`` -> ``BIGINT``)
only checks the rows against the new type and writes the descriptor.

SET NOT NULL scans the rows and fails on the first NULL; the others write only the descriptor.

``ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (email)`` rewrites the table's keys: every
row is read, the table's whole key range ``/Table/<t>`` is deleted (one range delete), and
each row is written again under its new key ``/Table/<t>/1/<email>/0`` with its secondary
index entries (whose keys end with the primary key); a duplicate new key is a
UniqueViolation naming the primary key. As in CockroachDB the old key columns keep a
unique index (``t_id_key``), unless the old key was the hidden rowid, which is dropped.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import table_prefix
from sqlkv.errors import DataError, NotNullViolation, NotSupportedError, ProgrammingError
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.expr import compile_expr
from sqlkv.sql.ddl.generated import uses_column
from sqlkv.sql.plan.dml_parts import row_checker
from sqlkv.sql.plan.foreign_keys import supporting_index
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.writer import RowWriter
from sqlkv.sql.casts import assign_cast, to_text
from sqlkv.sql.types import type_from_ast
from sqlkv.storage.kv import prefix_end


def _rows(table: TableDescriptor, txn) -> list[tuple]:
    codec = codec_for(table)
    return list(codec.decode_rows(txn.scan(codec.prefix, prefix_end(codec.prefix))))


def alter_column(table: TableDescriptor, action: exp.AlterColumn, catalog, env) -> None:
    """Apply one ALTER COLUMN action to ``table`` (a private copy) and store it."""
    col = table.column(action.this.name if isinstance(action.this, exp.Identifier) else str(action.this))
    if col.hidden or col.computed is not None:
        what = "hidden" if col.hidden else "generated"
        raise NotSupportedError(f'cannot alter the {what} column "{col.name}" (drop it and add it again)')
    args = action.args
    if args.get("dtype") is not None:
        using = args.get("using")
        _alter_type(table, col, args["dtype"], using if isinstance(using, exp.Expression) else None, catalog, env)
    elif args.get("default") is not None:
        node = args["default"]
        if any(isinstance(n, exp.Column) for n in node.walk()):
            raise ProgrammingError(f'default value of column "{col.name}" cannot reference columns')
        assign_cast(compile_expr(node, Scope([]), env)(()), col.type, col.name)  # refused now, not at INSERT
        col.default_sql = node.sql()
    elif args.get("drop") and args.get("allow_null"):
        if col.id in table.primary_index.column_ids:
            raise ProgrammingError(f'column "{col.name}" is in a primary key: it cannot allow NULL')
        col.nullable = True
    elif args.get("drop"):
        col.default_sql = None
    elif "allow_null" in args and args["allow_null"] is False:
        pos = table.columns.index(col)
        if any(row[pos] is None for row in _rows(table, catalog.txn)):
            raise NotNullViolation(f'column "{col.name}" of relation "{table.name}" contains null values')
        col.nullable = False
    else:
        raise NotSupportedError(f"unsupported ALTER COLUMN action: {action.sql()}")
    catalog.update(table)


def _alter_type(table: TableDescriptor, col, dtype: exp.DataType, using, catalog, env) -> None:
    for fk in table.foreign_keys:
        if col.id in fk.column_ids:
            raise NotSupportedError(f'cannot change the type of column "{col.name}": foreign key "{fk.name}" uses it')
    if table.referenced_by:
        raise NotSupportedError(f'cannot change column types of table "{table.name}" while foreign keys '
                                "reference it (drop them first)")
    user = uses_column(table, col.name)
    if user is not None:
        raise NotSupportedError(f'cannot change the type of column "{col.name}": {user} uses it')
    refuse_exploded(table, col, "change the type of")
    for idx in table.indexes:  # its entries are elements of the old type
        if idx.inverted and col.id in idx.column_ids:
            raise NotSupportedError(f'cannot change the type of column "{col.name}": inverted index '
                                    f'"{idx.name}" uses it (drop the index first)')
    new_type = type_from_ast(dtype)
    old_table = TableDescriptor.from_dict(table.to_dict())
    pos = table.columns.index(col)
    txn = catalog.txn
    rows = _rows(old_table, txn)
    if using is not None:
        fn = compile_expr(using, Scope(table_scope(old_table, table.name)), env)
        values = [fn(row) for row in rows]
    else:
        values = [row[pos] for row in rows]
    new_values = [_convert(v, new_type, col.name, using is not None) for v in values]
    # a same-kind change can still change stored values: DECIMAL(10,2) -> (10,1) rounds 2.25
    changed = any(type(a) is not type(b) or repr(a) != repr(b) for a, b in zip(values, new_values))
    rewrite = new_type.kind != col.type.kind or using is not None or changed
    col.type = new_type
    if new_type.kind != "INT":
        col.auto_increment = False  # max(key)+1 needs an INT key
    # CHECKs and partial-index predicates must still compile against the new type
    checker = row_checker(table, table.name, env)
    new_rows = []
    for row, v in zip(rows, new_values):
        new = list(row)
        new[pos] = v
        new_rows.append(checker.finish(new))
    if not rewrite:
        return
    old_writer = RowWriter(old_table, codec_for(old_table), txn)
    for row in rows:
        old_writer.delete(row)
    new_writer = RowWriter(table, codec_for(table), txn)
    for row in new_rows:
        new_writer.insert(row)


def _convert(value, typ, column: str, has_using: bool):
    """The old value as the new type, refusing what would lose information.

    Without USING, any value converts to a string type (PostgreSQL's assignment cast to
    text: ``INT`` -> ``TEXT`` needs no USING); other conversions are an INSERT's strict ones,
    and a refused one says to give USING, as PostgreSQL's hint does.
    """
    if typ.kind == "TEXT" and value is not None and not isinstance(value, str) and not has_using:
        value = to_text(value)
    try:
        new = assign_cast(value, typ, column)
    except DataError as exc:
        if has_using or typ.kind == "TEXT":
            raise
        raise type(exc)(f"{exc} (column \"{column}\" cannot be cast automatically to type {typ.sql()}: "
                        f"give USING expr)") from None
    if typ.kind == "FLOAT" and isinstance(value, int) and not isinstance(value, bool) and int(new) != value:
        raise DataError(f'value {value} of column "{column}" cannot be converted to FLOAT without loss')
    return new


def refuse_exploded(table: TableDescriptor, col, what: str) -> None:
    """Refuse to change a column stored in an exploded family (its keys follow its type)."""
    fam = next((f for f in table.families if f.exploded and col.id in f.column_ids), None)
    if fam is not None:
        raise NotSupportedError(f'cannot {what} column "{col.name}" of table "{table.name}": it is stored '
                                f'exploded (family "{fam.name}")')


def alter_primary_key(table: TableDescriptor, keys: list[tuple[str, bool]], catalog, env) -> None:
    """Make ``keys`` (column name, descending) the primary key of ``table`` (a private copy)
    and rewrite every row under its new key; store the descriptor."""
    cols = [table.column(name) for name, _ in keys]
    if len({c.id for c in cols}) != len(cols):
        raise ProgrammingError("primary key lists a column twice")
    hidden = [c for c in cols if c.hidden]
    if hidden:
        raise ProgrammingError(f'the hidden column "{hidden[0].name}" cannot be the primary key')
    for c in cols:
        refuse_exploded(table, c, "put into the primary key")
    generated = [c for c in cols if c.computed is not None]
    if generated:  # as CREATE TABLE: a row's key would change without its key columns being written
        raise NotSupportedError(f'a generated column cannot be part of the primary key '
                                f'(column "{generated[0].name}" of table "{table.name}")')
    old_pk = table.primary_index
    if [c.id for c in cols] == old_pk.column_ids and [d for _, d in keys] == old_pk.descending:
        return
    old_table = TableDescriptor.from_dict(table.to_dict())
    rows = _rows(old_table, catalog.txn)
    for c in cols:
        pos = table.columns.index(c)
        if any(row[pos] is None for row in rows):
            raise NotNullViolation(f'column "{c.name}" of relation "{table.name}" contains null values')
        c.nullable = False
    old_cols = [table.column_by_id(i) for i in old_pk.column_ids]
    if len(old_cols) == 1 and old_cols[0].hidden:
        dropped = old_cols[0].id
        pos = table.column_index(dropped)
        rows = [row[:pos] + row[pos + 1:] for row in rows]
        table.columns = [c for c in table.columns if c.id != dropped]
    elif not any(i.unique and i.predicate is None and sorted(i.column_ids) == sorted(old_pk.column_ids)
                 for i in table.indexes):
        name = f"{table.name}_{'_'.join(c.name for c in old_cols)}_key"
        if table.find_index(name) is not None:
            raise ProgrammingError(f'index "{name}" already exists (it would keep the old key unique)')
        table.indexes.append(IndexDescriptor(table.next_index_id, name, list(old_pk.column_ids),
                                             list(old_pk.descending), True))
        table.next_index_id += 1
    table.primary_index = IndexDescriptor(old_pk.id, old_pk.name, [c.id for c in cols], [d for _, d in keys])
    new_ids = set(table.primary_index.column_ids)
    for fam in table.families:
        fam.column_ids = [i for i in fam.column_ids if i not in new_ids]
    for c in table.columns:
        c.auto_increment = False
        if c.id in new_ids:
            c.family_id = 0
    if len(cols) == 1 and cols[0].type.kind == "INT":
        cols[0].auto_increment = True
    for fk in table.foreign_keys:  # its referencing scan may have used the old key
        if supporting_index(table, fk.column_ids) is None:
            table.indexes.append(IndexDescriptor(table.next_index_id, f"{table.name}_auto_index_{fk.name}",
                                                 list(fk.column_ids), [False] * len(fk.column_ids)))
            table.next_index_id += 1
    catalog.update(table)
    txn = catalog.txn
    start = table_prefix(table.id)
    txn.delete_range(start, prefix_end(start))
    writer = RowWriter(table, codec_for(table), txn)
    for row in rows:
        writer.insert(row)
