"""ALTER TABLE: ADD/DROP/RENAME COLUMN, RENAME TO, and the row rewrites they need."""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.errors import (
    DuplicateColumn,
    DuplicateTable,
    NotNullViolation,
    NotSupportedError,
    ProgrammingError,
    UndefinedColumn,
    UndefinedTable,
)
from sqlkv.sql.casts import assign_cast
from sqlkv.sql.context import Scope
from sqlkv.sql.ddl.alter_column import alter_column, alter_primary_key
from sqlkv.sql.ddl.constraints import add_constraint, add_foreign_key, drop_constraint, rename_constraint
from sqlkv.sql.ddl.foreign_keys import refuse_column_drop
from sqlkv.sql.ddl.generated import check_generated_columns, uses_column
from sqlkv.sql.ddl.indexes import table_rows
from sqlkv.sql.ddl.sequences import drop_owned_sequences
from sqlkv.sql.ddl.names import check_index_name, copy_table, ident, new_name, qualified_name, refuse_virtual
from sqlkv.sql.ddl.tables import TableBuilder, column_def, validate_expressions
from sqlkv.sql.ddl.views import refuse_drop_options
from sqlkv.sql.expr import compile_expr
from sqlkv.sql.plan.dml_parts import row_checker
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.exploded import delete_family_keys
from sqlkv.sql.rowstore.writer import RowWriter
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&

# -- ALTER TABLE -------------------------------------------------------------------------------


def alter_table(ast: exp.Alter, catalog, env) -> None:
    name = qualified_name(ast.this)
    refuse_virtual(name, catalog, "alter")
    table = catalog.find_table(name)
    if table is None:
        if ast.args.get("exists"):
            return
        raise UndefinedTable(f'relation "{name}" does not exist')
    if table.virtual is not None:
        raise ProgrammingError(f'cannot alter virtual table "{name}"')
    if ast.args.get("not_valid"):
        raise NotSupportedError(f'ADD CONSTRAINT ... NOT VALID is not supported (table "{name}"): '
                                "constraints are validated when added")
    table = copy_table(table)
    for action in ast.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            for cname, cols, ref in _add_column(table, action, catalog, env):
                add_foreign_key(table, cname, cols, ref, catalog, env)
        elif isinstance(action, exp.AddConstraint):
            for node in action.expressions:
                add_constraint(table, node, None, catalog, env)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "CONSTRAINT":
            for node in action.args.get("tables") or action.expressions:
                drop_constraint(table, ident(node), bool(action.args.get("exists")), catalog)
        elif isinstance(action, exp.RenameColumn) and action.args.get("constraint"):
            rename_constraint(table, ident(action.this), ident(action.args["to"]), catalog)
        elif isinstance(action, exp.AlterColumn):
            alter_column(table, action, catalog, env)
        elif isinstance(action, exp.PrimaryKey):
            keys = [(ident(o.this), bool(o.args.get("desc"))) for o in action.expressions]
            alter_primary_key(table, keys, catalog, env)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
            refuse_drop_options(action, "DROP COLUMN")
            for col_node in action.args.get("tables") or action.expressions:
                _drop_column(table, ident(col_node), bool(action.args.get("exists")), catalog)
        elif isinstance(action, exp.Command) and str(action.this).upper() == "DROP":
            words = str(action.expression).split()
            if words and words[0].upper() == "COLUMN":
                words = words[1:]
            if len(words) != 1:
                raise NotSupportedError(f"unsupported ALTER TABLE action: DROP {action.expression}")
            _drop_column(table, words[0].lower(), False, catalog)
        elif isinstance(action, exp.RenameColumn):
            _rename_column(table, ident(action.this), ident(action.args["to"]), catalog)
        elif isinstance(action, exp.AlterRename) and _rename_target(ast) is not None:
            # ALTER TABLE t RENAME a TO b (PostgreSQL's RENAME [COLUMN], as Alembic writes it):
            # sqlglot reads "RENAME a" as a table rename and leaves "TO b" aside
            _rename_column(table, ident(action.this), ident(_rename_target(ast)), catalog)
        elif isinstance(action, exp.AlterRename):
            new = new_name(action.this, "table")
            if catalog.name_taken(new):
                raise DuplicateTable(f'relation "{new}" already exists')
            old = table.name
            table.name = new
            catalog.update(table, old_name=old)
        else:
            raise NotSupportedError(f"unsupported ALTER TABLE action: {action.sql()}")


def _rename_target(ast: exp.Alter) -> exp.Expression | None:
    """``b`` of ``ALTER TABLE t RENAME a TO b``, where sqlglot keeps it as an option."""
    targets = [o.this for o in ast.args.get("options") or [] if isinstance(o, exp.ToTableProperty)]
    return targets[0] if targets else None


def _add_column(table: TableDescriptor, cd: exp.ColumnDef, catalog, env) -> list:
    """Add the column; return its REFERENCES clauses for the caller to declare."""
    tb = TableBuilder(table.name, table.id)
    col = column_def(cd, tb, table.next_column_id)
    if table.find_column(col.name) is not None:
        if cd.args.get("exists"):
            return []
        raise DuplicateColumn(f'column "{col.name}" of relation "{table.name}" already exists')
    if tb.pk is not None:
        raise NotSupportedError("cannot add a PRIMARY KEY column")
    if col.computed is not None and not col.virtual:
        raise NotSupportedError(f'cannot add a STORED generated column ("{col.name}"): existing rows would need '
                                "a rewrite; add it VIRTUAL (as SQLite requires)")
    if tb.identities:
        raise NotSupportedError(f'ADD COLUMN ... GENERATED AS IDENTITY is not supported (column "{col.name}"); '
                                "create a sequence and use DEFAULT nextval(...)")
    table.next_column_id += 1
    old_table = TableDescriptor.from_dict(table.to_dict())
    table.columns.append(col)
    table.checks.extend(tb.checks)
    for cname, cols in tb.uniques:
        iname = cname or f"{table.name}_{col.name}_key"
        check_index_name(table, iname)
        table.indexes.append(IndexDescriptor(table.next_index_id, iname, [col.id], [False], True))
        table.next_index_id += 1
    validate_expressions(table, env)
    check_generated_columns(table, env)
    default = None
    if col.default_sql is not None:
        default = assign_cast(compile_expr(parse_expression(col.default_sql), Scope([]), env)(()), col.type, col.name)
    txn = catalog.txn
    new_indexes = [ic for ic in codec_for(table).indexes if col.id in ic.index.column_ids]
    if default is None and not new_indexes and not tb.checks:
        # absent = NULL: no row is rewritten; only an existing row makes NOT NULL impossible
        if not col.nullable and next(iter(table_rows(old_table, txn)), None) is not None:
            raise NotNullViolation(
                f'column "{col.name}" of relation "{table.name}" contains null values (add a DEFAULT or allow NULL)'
            )
        catalog.update(table)
        return tb.fks
    # the rewrite puts keys inside the range being read, so the rows are read first
    rows = list(table_rows(old_table, txn))
    if rows and default is None and not col.nullable:
        raise NotNullViolation(
            f'column "{col.name}" of relation "{table.name}" contains null values (add a DEFAULT or allow NULL)'
        )
    catalog.update(table)
    if not rows:
        return tb.fks
    # Rewrite rows when the new column is non-NULL somewhere, or has new checks/indexes.
    writer = RowWriter(table, codec_for(table), txn)
    checker = row_checker(table, table.name, env)
    for old in rows:
        new = old + (default,)
        checker.check(new)
        if default is not None:
            for key, value in codec_for(table).primary_kvs(new):
                if value is not None:
                    txn.put(key, value)
        for ic in new_indexes:
            if ic.holds(new):
                writer._put_entry(ic, new, *ic.entry(new))
    return tb.fks


def _drop_column(table: TableDescriptor, cname: str, if_exists: bool, catalog) -> None:
    col = table.find_column(cname)
    if col is None:
        if if_exists:
            return
        raise UndefinedColumn(f'column "{cname}" of relation "{table.name}" does not exist')
    if col.id in table.primary_index.column_ids:
        raise ProgrammingError(f'cannot drop column "{col.name}": it is part of the primary key')
    refuse_column_drop(table, col, catalog)
    for idx in table.indexes:
        if col.id in idx.column_ids or col.id in idx.storing or _mentions(idx.predicate, col.name):
            raise ProgrammingError(f'cannot drop column "{col.name}": index "{idx.name}" uses it (drop the index first)')
    for chk in table.checks:
        if _mentions(chk.expr_sql, col.name):
            raise ProgrammingError(f'cannot drop column "{col.name}": check constraint "{chk.name}" uses it')
    user = uses_column(table, col.name)
    if user is not None:
        raise ProgrammingError(f'cannot drop column "{col.name}": {user} uses it')
    if sum(1 for c in table.columns if not c.hidden) == 1 and not col.hidden:
        raise ProgrammingError(f'cannot drop the only column of table "{table.name}"')
    exploded = next((f for f in table.families if f.exploded and col.id in f.column_ids), None)
    if exploded is not None:  # its keys would outlive the rows (a deleted row's family 0 goes alone)
        delete_family_keys(catalog.txn, codec_for(table), exploded.id)
        table.families = [f for f in table.families if f is not exploded]
    table.columns = [c for c in table.columns if c.id != col.id]
    drop_owned_sequences(catalog, table.id, col.id)
    for fam in table.families:
        fam.column_ids = [c for c in fam.column_ids if c != col.id]
    # The column's values stay in old rows under its (never reused) id and are ignored.
    catalog.update(table)


def _mentions(expr_sql: str | None, column: str) -> bool:
    if expr_sql is None:
        return False
    return any(c.name.lower() == column.lower() for c in parse_expression(expr_sql).find_all(exp.Column))


def _renamed(expr_sql: str, old: str, new: str) -> str:
    tree = parse_expression(expr_sql)
    for c in tree.find_all(exp.Column):
        if c.name.lower() == old.lower():
            c.set("this", exp.to_identifier(new))
    return tree.sql()


def _rename_column(table: TableDescriptor, old: str, new: str, catalog) -> None:
    col = table.column(old)
    if table.find_column(new) is not None:
        raise DuplicateColumn(f'column "{new}" of relation "{table.name}" already exists')
    for chk in table.checks:
        chk.expr_sql = _renamed(chk.expr_sql, col.name, new)
    for gen in table.columns:
        if _mentions(gen.computed, col.name):
            gen.computed = _renamed(gen.computed, col.name, new)
    for idx in table.indexes:  # a partial index's predicate names columns too
        if _mentions(idx.predicate, col.name):
            idx.predicate = _renamed(idx.predicate, col.name, new)
    col.name = new
    catalog.update(table)
