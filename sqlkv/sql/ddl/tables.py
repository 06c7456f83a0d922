"""CREATE TABLE: column definitions, keys, constraints and families -> a `TableDescriptor`."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from sqlkv.catalog.descriptors import (
    CheckDescriptor, ColumnDescriptor, FamilyDescriptor, IndexDescriptor, TableDescriptor,
)
from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.ddl.foreign_keys import declare_foreign_key
from sqlkv.sql.ddl.names import check_index_name, ident, new_name, refuse_key_options, refuse_table_properties
from sqlkv.sql.expr import compile_expr
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.types import INT, is_serial, type_from_ast

# -- CREATE TABLE ------------------------------------------------------------------------------


class TableBuilder:
    def __init__(self, name: str, table_id: int) -> None:
        self.name = name
        self.id = table_id
        self.columns: list[ColumnDescriptor] = []
        self.pk: list[tuple[str, bool]] | None = None
        self.pk_name: str | None = None
        self.uniques: list[tuple[str | None, list[tuple[str, bool]]]] = []
        self.checks: list[CheckDescriptor] = []
        self.serials: list[str] = []  # SERIAL columns: must be the single-column primary key
        self.fks: list[tuple[str | None, list[str], exp.Reference]] = []  # (name, columns, REFERENCES)

    def column(self, name: str) -> ColumnDescriptor:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        raise ProgrammingError(f'column "{name}" named in key does not exist in table "{self.name}"')

    def set_pk(self, cols: list[tuple[str, bool]], name: str | None) -> None:
        if self.pk is not None:
            raise ProgrammingError(f'multiple primary keys for table "{self.name}" are not allowed')
        self.pk = cols
        self.pk_name = name


def column_def(cd: exp.ColumnDef, tb: TableBuilder, col_id: int) -> ColumnDescriptor:
    name = ident(cd.this)
    kind = cd.args.get("kind")
    if kind is None:
        raise ProgrammingError(f'column "{name}" needs a type')
    col = ColumnDescriptor(col_id, name, type_from_ast(kind))
    if is_serial(kind):
        col.nullable = False
        tb.serials.append(name)
    for cons in cd.constraints:
        c = cons.kind
        cname = ident(cons.this) if cons.this is not None else None
        if isinstance(c, (exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint)):
            refuse_key_options(c, f'column "{name}"')
        if isinstance(c, exp.PrimaryKeyColumnConstraint):
            tb.set_pk([(name, bool(c.args.get("desc")))], cname)
        elif isinstance(c, exp.NotNullColumnConstraint):
            col.nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.UniqueColumnConstraint):
            tb.uniques.append((cname, [(name, False)]))
        elif isinstance(c, exp.DefaultColumnConstraint):
            col.default_sql = c.this.sql()
        elif isinstance(c, exp.CheckColumnConstraint):
            tb.checks.append(CheckDescriptor(cname or f"{tb.name}_{name}_check", c.this.sql()))
        elif isinstance(c, exp.AutoIncrementColumnConstraint):
            continue
        elif isinstance(c, exp.CollateColumnConstraint):
            # text compares by code point: only the binary collation is what sqlkv does
            if ident(c.this).upper() not in ("C", "POSIX", "BINARY", "DEFAULT", "UCS_BASIC"):
                raise NotSupportedError(f'COLLATE {c.this.sql()} is not supported (column "{name}"); only "C"')
        elif isinstance(c, exp.Reference):
            tb.fks.append((cname, [name], c))
        else:
            raise NotSupportedError(f'unsupported constraint on column "{name}": {cons.sql()}')
    return col


def key_list(node: exp.Expression, directions: dict[str, bool]) -> list[tuple[str, bool]]:
    items = node.expressions if not isinstance(node, exp.Schema) else node.expressions
    out = []
    for it in items:
        n = ident(it)
        desc = bool(it.args.get("desc")) if isinstance(it, exp.Ordered) else directions.get(n, False)
        out.append((n, desc))
    return out


def _table_constraint(node: exp.Expression, tb: TableBuilder, directions: dict[str, bool], cname: str | None) -> None:
    if isinstance(node, exp.Constraint):
        for inner in node.expressions:
            _table_constraint(inner, tb, directions, ident(node.this))
        return
    if isinstance(node, (exp.PrimaryKey, exp.UniqueColumnConstraint)):
        refuse_key_options(node, f'table "{tb.name}"')
    if isinstance(node, exp.PrimaryKey):
        tb.set_pk(key_list(node, directions), cname)
    elif isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        if schema is None:
            raise ProgrammingError("UNIQUE constraint needs a column list")
        tb.uniques.append((cname, key_list(schema, directions)))
    elif isinstance(node, exp.CheckColumnConstraint):
        tb.checks.append(CheckDescriptor(cname or f"{tb.name}_check{len(tb.checks) + 1}", node.this.sql()))
    elif isinstance(node, exp.ForeignKey):
        ref = node.args.get("reference")
        if ref is None:
            raise ProgrammingError(f'FOREIGN KEY needs REFERENCES (table "{tb.name}")')
        tb.fks.append((cname, [ident(e) for e in node.expressions], ref))
    else:
        raise NotSupportedError(f"unsupported table element: {node.sql()}")


def create_table(stmt: ParsedStatement, catalog, env) -> None:
    ast = stmt.ast
    schema = ast.this
    if not isinstance(schema, exp.Schema):
        raise NotSupportedError("CREATE TABLE ... AS SELECT is not supported; create the table, then INSERT ... SELECT")
    name = new_name(schema.this, "table")
    refuse_table_properties(ast, name)
    if ast.args.get("replace"):
        raise NotSupportedError(f'CREATE OR REPLACE TABLE is not supported ("{name}"); DROP TABLE IF EXISTS first')
    if catalog.name_taken(name):
        if ast.args.get("exists"):
            return
        raise ProgrammingError(f'relation "{name}" already exists')
    tb = TableBuilder(name, catalog.allocate_id())
    next_col = 1
    for el in schema.expressions:
        if isinstance(el, exp.ColumnDef):
            col = column_def(el, tb, next_col)
            if tb.columns and any(c.name.lower() == col.name.lower() for c in tb.columns):
                raise ProgrammingError(f'column "{col.name}" specified more than once')
            tb.columns.append(col)
            next_col += 1
        else:
            _table_constraint(el, tb, stmt.key_directions, None)
    if not tb.columns:
        raise ProgrammingError(f'table "{name}" must have at least one column')
    if tb.pk is None:
        rowid = ColumnDescriptor(next_col, "rowid", INT, nullable=False, hidden=True, auto_increment=True)
        if tb.columns and any(c.name.lower() == "rowid" for c in tb.columns):
            rowid.name = "_rowid_"
        tb.columns.append(rowid)
        next_col += 1
        tb.pk = [(rowid.name, False)]
    pk_cols = [tb.column(n) for n, _ in tb.pk]
    if len(set(c.id for c in pk_cols)) != len(pk_cols):
        raise ProgrammingError("primary key lists a column twice")
    for c in pk_cols:
        c.nullable = False
    if len(pk_cols) == 1 and pk_cols[0].type.kind == "INT":
        pk_cols[0].auto_increment = True
    for serial in tb.serials:
        if len(pk_cols) != 1 or pk_cols[0].name.lower() != serial.lower():
            raise NotSupportedError(
                f'SERIAL column "{serial}" must be the table\'s single-column PRIMARY KEY '
                "(its values are assigned as max(key)+1)"
            )
    primary = IndexDescriptor(1, tb.pk_name or f"{name}_pkey", [c.id for c in pk_cols], [d for _, d in tb.pk])
    table = TableDescriptor(tb.id, name, tb.columns, primary, next_column_id=next_col)
    _add_families(table, stmt.families)
    for cname, cols in tb.uniques:
        descs = [tb.column(n) for n, _ in cols]
        if [c.id for c in descs] == primary.column_ids:
            continue  # UNIQUE on the primary key adds nothing
        iname = cname or f"{name}_{'_'.join(c.name for c in descs)}_key"
        check_index_name(table, iname)
        table.indexes.append(IndexDescriptor(table.next_index_id, iname, [c.id for c in descs], [d for _, d in cols], True))
        table.next_index_id += 1
    table.checks = tb.checks
    parents = [declare_foreign_key(table, cname, cols, ref, catalog, None) for cname, cols, ref in tb.fks]
    validate_expressions(table, env)
    catalog.create(table)
    for parent in parents:
        if parent is not table:
            catalog.update(parent)


def _add_families(table: TableDescriptor, families: list[tuple[str, list[str]]]) -> None:
    pk = set(table.primary_index.column_ids)
    seen: dict[int, str] = {}
    for fname, cols in families:
        fam = FamilyDescriptor(table.next_family_id, fname, [])
        table.next_family_id += 1
        for cn in cols:
            col = table.column(cn)
            if col.id in seen:
                raise ProgrammingError(f'column "{col.name}" is listed in two families ("{seen[col.id]}", "{fname}")')
            seen[col.id] = fname
            if col.id in pk:
                continue  # key columns live in the key, not in a family
            col.family_id = fam.id
            fam.column_ids.append(col.id)
        table.families.append(fam)
    if len(table.families) >= 99:
        raise ProgrammingError(f'table "{table.name}" has too many column families')


def validate_expressions(table: TableDescriptor, env) -> None:
    scope = Scope(table_scope(table, table.name))
    for chk in table.checks:
        compile_expr(sqlglot.parse_one(chk.expr_sql), scope, env)
    for col in table.columns:
        if col.default_sql is not None:
            node = sqlglot.parse_one(col.default_sql)
            if any(isinstance(n, exp.Column) for n in node.walk()):
                raise ProgrammingError(f'default value of column "{col.name}" cannot reference columns')
            compile_expr(node, Scope([]), env)
