"""ALTER TABLE ... ADD / DROP / RENAME CONSTRAINT: CHECK, UNIQUE and FOREIGN KEY.

``ALTER TABLE t ADD CONSTRAINT b_pos CHECK (b > 0)`` compiles the expression against ``t``,
scans every row of ``t`` (``/Table/<t>/1``) and fails with CheckViolation on the first row it
rejects; ``ADD CONSTRAINT u UNIQUE (a)`` is a unique index backfilled in the statement's
transaction (a duplicate is a UniqueViolation and leaves nothing); ``FOREIGN KEY`` goes through
`sqlkv.sql.ddl.foreign_keys` and validates every row's key. DROP CONSTRAINT removes a CHECK, a
foreign key or a UNIQUE constraint's index (a range delete of its entries); RENAME CONSTRAINT
changes only the descriptor. The primary key is changed by ALTER PRIMARY KEY instead.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.descriptors import CheckDescriptor, IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import index_prefix
from sqlkv.errors import CheckViolation, DuplicateObject, NotSupportedError, ProgrammingError, UndefinedObject
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.ddl.foreign_keys import (
    constraint_names,
    declare_foreign_key,
    drop_foreign_key,
    refuse_index_drop,
    validate_existing_rows,
)
from sqlkv.sql.ddl.indexes import backfill_index, table_rows
from sqlkv.sql.ddl.names import check_index_name, ident, refuse_key_options
from sqlkv.sql.ddl.tables import key_list, validate_expressions
from sqlkv.sql.expr import compile_schema_expr
from sqlkv.storage.kv import prefix_end
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&


def add_constraint(table: TableDescriptor, node: exp.Expression, cname: str | None, catalog, env) -> None:
    """ALTER TABLE ... ADD [CONSTRAINT name] FOREIGN KEY | CHECK | UNIQUE, validating the rows."""
    if isinstance(node, exp.Constraint):
        for inner in node.expressions:
            if isinstance(inner, exp.Properties):  # UNIQUE (n) WITH (fillfactor = 50)
                raise NotSupportedError(f"storage parameter {inner.sql()} is not supported "
                                        f'(constraint "{ident(node.this)}" of table "{table.name}")')
        for inner in node.expressions:
            add_constraint(table, inner, ident(node.this), catalog, env)
        return
    if cname is not None and cname.lower() in constraint_names(table):
        raise DuplicateObject(f'constraint "{cname}" for relation "{table.name}" already exists')
    txn = catalog.txn
    if isinstance(node, exp.ForeignKey):
        ref = node.args.get("reference")
        if ref is None:
            raise ProgrammingError(f'FOREIGN KEY needs REFERENCES (table "{table.name}")')
        add_foreign_key(table, cname, [ident(e) for e in node.expressions], ref, catalog, env)
    elif isinstance(node, exp.CheckColumnConstraint):
        n = len(table.checks) + 1
        while cname is None and f"{table.name}_check{n}" in constraint_names(table):
            n += 1
        chk = CheckDescriptor(cname or f"{table.name}_check{n}", node.this.sql())
        table.checks.append(chk)
        validate_expressions(table, env)
        fn = compile_schema_expr(parse_expression(chk.expr_sql), Scope(table_scope(table, table.name)), env)
        for row in table_rows(table, txn):
            if fn(row) is False:
                raise CheckViolation(f'check constraint "{chk.name}" of relation "{table.name}" is violated by some row')
        catalog.update(table)
    elif isinstance(node, exp.UniqueColumnConstraint):
        refuse_key_options(node, f'table "{table.name}"')
        if node.this is None:
            raise ProgrammingError("UNIQUE constraint needs a column list")
        cols = [table.column(n) for n, _ in key_list(node.this, {})]
        iname = cname or f"{table.name}_{'_'.join(c.name for c in cols)}_key"
        check_index_name(table, iname)
        idx = IndexDescriptor(table.next_index_id, iname, [c.id for c in cols], [False] * len(cols), True)
        table.next_index_id += 1
        table.indexes.append(idx)
        catalog.update(table)
        backfill_index(table, idx, env.ctx)
    elif isinstance(node, exp.PrimaryKey):
        raise NotSupportedError(f'table "{table.name}" has a primary key; use ALTER TABLE ... ALTER PRIMARY KEY '
                                "USING COLUMNS (...) to change it")
    else:
        raise NotSupportedError(f"unsupported constraint in ALTER TABLE ... ADD: {node.sql()}")


def add_foreign_key(table: TableDescriptor, cname: str | None, cols: list[str], ref: exp.Reference, catalog,
                  env) -> None:
    parent = declare_foreign_key(table, cname, cols, ref, catalog, lambda t, idx: backfill_index(t, idx, env.ctx))
    validate_existing_rows(table, table.foreign_keys[-1], parent, catalog.txn)
    catalog.update(table)
    if parent is not table:
        catalog.update(parent)


def rename_constraint(table: TableDescriptor, old: str, new: str, catalog) -> None:
    if new.lower() in constraint_names(table):
        raise DuplicateObject(f'constraint "{new}" for relation "{table.name}" already exists')
    named = [*table.foreign_keys, *table.checks, *[i for i in table.all_indexes() if i.unique]]
    for item in named:
        if item.name.lower() == old.lower():
            item.name = new
            catalog.update(table)
            return
    raise UndefinedObject(f'constraint "{old}" of relation "{table.name}" does not exist')


def drop_constraint(table: TableDescriptor, cname: str, if_exists: bool, catalog) -> None:
    lname = cname.lower()
    fk = next((f for f in table.foreign_keys if f.name.lower() == lname), None)
    if fk is not None:
        drop_foreign_key(table, fk, catalog)
        catalog.update(table)
        return
    chk = next((c for c in table.checks if c.name.lower() == lname), None)
    if chk is not None:
        table.checks = [c for c in table.checks if c is not chk]
        catalog.update(table)
        return
    idx = table.find_index(cname)
    if idx is not None and idx is table.primary_index:
        raise NotSupportedError(f'cannot drop the primary key "{idx.name}"; use ALTER TABLE "{table.name}" '
                                "ALTER PRIMARY KEY USING COLUMNS (...)")
    if idx is not None and idx.unique:
        refuse_index_drop(table, idx, catalog)
        table.indexes = [i for i in table.indexes if i.id != idx.id]
        catalog.update(table)
        start = index_prefix(table.id, idx.id)
        catalog.txn.delete_range(start, prefix_end(start))
        return
    if if_exists:
        return
    raise UndefinedObject(f'constraint "{cname}" of relation "{table.name}" does not exist')
