"""DDL: CREATE/DROP TABLE, CREATE/DROP INDEX (with backfill), ALTER TABLE, CREATE/DROP VIEW.

``CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE)`` is turned by `create_table`
into a `TableDescriptor`: columns get ids 1, 2; the primary index ``users_pkey`` (id 1) holds
``id``; the column-level UNIQUE becomes the unique secondary index ``users_email_key`` (id 2).
A table without a PRIMARY KEY gets a hidden, auto-assigned ``rowid`` column as its key; a
single INT primary-key column auto-assigns max+1 when omitted (like SQLite's INTEGER PRIMARY
KEY). The descriptor is written through the `Catalog` in the statement's transaction, so DDL is
transactional: a ROLLBACK makes the table vanish.

``CREATE UNIQUE INDEX ... ON users (name)`` writes the descriptor and backfills one entry per
existing row in the same transaction; a duplicate raises IntegrityError and the statement's
savepoint removes every entry written so far. ``ADD COLUMN`` with a non-NULL DEFAULT rewrites
each row's family-0 value (a backfill); without a default nothing is rewritten (absent = NULL).
"""

from __future__ import annotations

from typing import Any

import re

import sqlglot
from sqlglot import exp

from sqlkv.catalog.descriptors import (
    CheckDescriptor,
    ColumnDescriptor,
    FamilyDescriptor,
    IndexDescriptor,
    TableDescriptor,
    ViewDescriptor,
)
from sqlkv.encoding.keys import index_prefix, table_prefix
from sqlkv.errors import (
    CheckViolation,
    ConditionFailedError,
    IntegrityError,
    NotSupportedError,
    ProgrammingError,
    UndefinedObject,
    UniqueViolation,
    UndefinedTable,
    UndefinedColumn,
    NotNullViolation,
    SqlSyntaxError,
)
from sqlkv.sql.context import ExecContext, Scope
from sqlkv.sql.ddl_alter import alter_column, alter_primary_key
from sqlkv.sql.ddl_foreign_keys import (
    before_drop_table,
    constraint_names,
    declare_foreign_key,
    drop_foreign_key,
    refuse_column_drop,
    refuse_index_drop,
    validate_existing_rows,
)
from sqlkv.sql.expr import compile_expr
from sqlkv.sql.virtual import virtual_table
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.context import table_scope
from sqlkv.sql.plan.dml_parts import row_checker
from sqlkv.sql.plan.select import plan_query
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.writer import RowWriter
from sqlkv.sql.types import INT, assign_cast, is_serial, type_from_ast
from sqlkv.storage.kv import prefix_end


def _name(node: Any) -> str:
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, (exp.Column, exp.Table)):
        return _name(node.this)
    if isinstance(node, exp.Ordered):
        return _name(node.this)
    return str(node.name if hasattr(node, "name") else node).lower()


# Schemas whose tables are virtual (read-only views of the catalog and the KV store).
RESERVED_SCHEMAS = ("information_schema", "sqlkv_internal", "pg_catalog")


def _qualified(node: Any) -> str:
    """The name a table reference resolves to: ``schema.name`` for a reserved schema.

    Any other schema is refused rather than silently dropped: sqlkv has one unnamed schema
    (queries do not accept ``public.t`` either). A quoted ``"information_schema.tables"``
    keeps its dot.
    """
    if not isinstance(node, exp.Table):
        return _name(node)
    name = _name(node.this)
    if node.args.get("catalog") is not None:
        raise NotSupportedError(f'cross-database references are not supported: "{node.sql()}"')
    db = node.args.get("db")
    if db is None:
        return name
    schema = _name(db)
    if schema in RESERVED_SCHEMAS:
        return f"{schema}.{name}"
    raise NotSupportedError(f'schema "{schema}" is not supported (sqlkv has one unnamed schema): "{schema}.{name}"')


def _new_name(node: Any, what: str) -> str:
    """The name of a table/view/index being created: never in a reserved schema, never dotted."""
    name = _qualified(node)
    if "." in name:
        schema = name.split(".", 1)[0].lower()
        if schema in RESERVED_SCHEMAS:
            raise ProgrammingError(f'cannot create {what} "{name}": schema "{schema}" is reserved for system tables')
        raise ProgrammingError(f'{what} name "{name}" cannot contain "."')
    return name


def _refuse_virtual(name: str, catalog, action: str) -> None:
    """DDL never targets a virtual table (information_schema.*, sqlkv_internal.*)."""
    if "." in name and virtual_table(name, catalog) is not None:
        raise ProgrammingError(f'cannot {action} virtual table "{name}"')
    if "." in name and name.split(".", 1)[0].lower() in RESERVED_SCHEMAS:
        raise ProgrammingError(f'cannot {action} "{name}": schema "{name.split(".", 1)[0].lower()}" is reserved')


def _refuse_table_properties(ast: exp.Create, name: str) -> None:
    """TEMP, UNLOGGED, WITH (storage parameters), ON COMMIT...: refused, never ignored."""
    props = ast.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.TemporaryProperty):
            raise NotSupportedError(f'TEMP/TEMPORARY tables and views are not supported ("{name}")')
        if isinstance(prop, exp.UnloggedProperty):
            raise NotSupportedError(f'UNLOGGED tables are not supported ("{name}")')
        if type(prop) is exp.Property:
            raise NotSupportedError(f'storage parameter WITH ({prop.sql()}) is not supported ("{name}")')
        raise NotSupportedError(f'clause "{prop.sql()}" is not supported ("{name}")')


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
    if using is not None and _name(using).upper() not in _ORDERED_METHODS:
        raise NotSupportedError(f'index method USING {_name(using).upper()} is not supported (only ordered indexes)')
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


def _refuse_key_options(node: exp.Expression, what: str) -> None:
    """PRIMARY KEY / UNIQUE extras (USING HASH, INCLUDE, DEFERRABLE, NULLS NOT DISTINCT...)."""
    if node.args.get("nulls"):
        raise NotSupportedError(f"UNIQUE NULLS NOT DISTINCT is not supported ({what})")
    options = node.args.get("options")
    if options:
        raise NotSupportedError(f"constraint option {' '.join(str(o) for o in options)} is not supported ({what})")
    params = node.args.get("include")
    if params is not None:
        extra = {k: v for k, v in params.args.items() if v and k != "with_storage"}
        if extra or params.args.get("with_storage"):
            raise NotSupportedError(f"{params.sql() or 'index parameters'} on a key is not supported ({what})")


def execute_ddl(stmt: ParsedStatement, catalog, env) -> None:
    ast = stmt.ast
    kind = stmt.kind
    if kind == "CREATE TABLE":
        create_table(stmt, catalog, env)
    elif kind == "CREATE INDEX":
        create_index(stmt, catalog, env)
    elif kind == "CREATE VIEW":
        create_view(ast, catalog, env)
    elif kind.startswith("DROP "):
        drop(ast, catalog, env)
    elif kind == "ALTER TABLE":
        alter_table(ast, catalog, env)
    else:
        raise NotSupportedError(f"unsupported statement: {kind}")


# -- CREATE TABLE ------------------------------------------------------------------------------


class _TableBuilder:
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


def _column_def(cd: exp.ColumnDef, tb: _TableBuilder, col_id: int) -> ColumnDescriptor:
    name = _name(cd.this)
    kind = cd.args.get("kind")
    if kind is None:
        raise ProgrammingError(f'column "{name}" needs a type')
    col = ColumnDescriptor(col_id, name, type_from_ast(kind))
    if is_serial(kind):
        col.nullable = False
        tb.serials.append(name)
    for cons in cd.constraints:
        c = cons.kind
        cname = _name(cons.this) if cons.this is not None else None
        if isinstance(c, (exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint)):
            _refuse_key_options(c, f'column "{name}"')
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
            if _name(c.this).upper() not in ("C", "POSIX", "BINARY", "DEFAULT", "UCS_BASIC"):
                raise NotSupportedError(f'COLLATE {c.this.sql()} is not supported (column "{name}"); only "C"')
        elif isinstance(c, exp.Reference):
            tb.fks.append((cname, [name], c))
        else:
            raise NotSupportedError(f'unsupported constraint on column "{name}": {cons.sql()}')
    return col


def _key_list(node: exp.Expression, directions: dict[str, bool]) -> list[tuple[str, bool]]:
    items = node.expressions if not isinstance(node, exp.Schema) else node.expressions
    out = []
    for it in items:
        n = _name(it)
        desc = bool(it.args.get("desc")) if isinstance(it, exp.Ordered) else directions.get(n, False)
        out.append((n, desc))
    return out


def _table_constraint(node: exp.Expression, tb: _TableBuilder, directions: dict[str, bool], cname: str | None) -> None:
    if isinstance(node, exp.Constraint):
        for inner in node.expressions:
            _table_constraint(inner, tb, directions, _name(node.this))
        return
    if isinstance(node, (exp.PrimaryKey, exp.UniqueColumnConstraint)):
        _refuse_key_options(node, f'table "{tb.name}"')
    if isinstance(node, exp.PrimaryKey):
        tb.set_pk(_key_list(node, directions), cname)
    elif isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        if schema is None:
            raise ProgrammingError("UNIQUE constraint needs a column list")
        tb.uniques.append((cname, _key_list(schema, directions)))
    elif isinstance(node, exp.CheckColumnConstraint):
        tb.checks.append(CheckDescriptor(cname or f"{tb.name}_check{len(tb.checks) + 1}", node.this.sql()))
    elif isinstance(node, exp.ForeignKey):
        ref = node.args.get("reference")
        if ref is None:
            raise ProgrammingError(f'FOREIGN KEY needs REFERENCES (table "{tb.name}")')
        tb.fks.append((cname, [_name(e) for e in node.expressions], ref))
    else:
        raise NotSupportedError(f"unsupported table element: {node.sql()}")


def create_table(stmt: ParsedStatement, catalog, env) -> None:
    ast = stmt.ast
    schema = ast.this
    if not isinstance(schema, exp.Schema):
        raise NotSupportedError("CREATE TABLE ... AS SELECT is not supported; create the table, then INSERT ... SELECT")
    name = _new_name(schema.this, "table")
    _refuse_table_properties(ast, name)
    if ast.args.get("replace"):
        raise NotSupportedError(f'CREATE OR REPLACE TABLE is not supported ("{name}"); DROP TABLE IF EXISTS first')
    if catalog.name_taken(name):
        if ast.args.get("exists"):
            return
        raise ProgrammingError(f'relation "{name}" already exists')
    tb = _TableBuilder(name, catalog.allocate_id())
    next_col = 1
    for el in schema.expressions:
        if isinstance(el, exp.ColumnDef):
            col = _column_def(el, tb, next_col)
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
        _check_index_name(table, iname)
        table.indexes.append(IndexDescriptor(table.next_index_id, iname, [c.id for c in descs], [d for _, d in cols], True))
        table.next_index_id += 1
    table.checks = tb.checks
    parents = [declare_foreign_key(table, cname, cols, ref, catalog, None) for cname, cols, ref in tb.fks]
    _validate_expressions(table, env)
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


def _validate_expressions(table: TableDescriptor, env) -> None:
    scope = Scope(table_scope(table, table.name))
    for chk in table.checks:
        compile_expr(sqlglot.parse_one(chk.expr_sql), scope, env)
    for col in table.columns:
        if col.default_sql is not None:
            node = sqlglot.parse_one(col.default_sql)
            if any(isinstance(n, exp.Column) for n in node.walk()):
                raise ProgrammingError(f'default value of column "{col.name}" cannot reference columns')
            compile_expr(node, Scope([]), env)


def _copy(table: TableDescriptor) -> TableDescriptor:
    """A private copy: descriptors from the catalog may be shared through its cache."""
    return TableDescriptor.from_dict(table.to_dict())


def _check_index_name(table: TableDescriptor, name: str) -> None:
    if table.find_index(name) is not None:
        raise ProgrammingError(f'index "{name}" already exists')


# -- indexes -----------------------------------------------------------------------------------


def create_index(stmt: ParsedStatement, catalog, env) -> None:
    ast = stmt.ast
    index = ast.this
    if not isinstance(index, exp.Index) or index.args.get("table") is None:
        raise SqlSyntaxError("syntax error: expected CREATE INDEX name ON table (columns)")
    if ast.args.get("replace"):
        raise NotSupportedError("CREATE OR REPLACE INDEX is not supported; DROP INDEX IF EXISTS first")
    tname = _qualified(index.args["table"])
    _refuse_virtual(tname, catalog, "index")
    table = catalog.get_table(tname)
    if table.virtual is not None:
        raise ProgrammingError(f'cannot index virtual table "{table.name}"')
    table = _copy(table)
    params = index.args.get("params")
    _refuse_index_clauses(stmt, params, table.name)
    cols_nodes = params.args.get("columns") if params is not None else None
    if not cols_nodes:
        raise ProgrammingError("CREATE INDEX needs a column list")
    cols = []
    desc = []
    for o in cols_nodes:
        inner = o.this if isinstance(o, exp.Ordered) else o
        if not isinstance(inner, exp.Column):
            raise NotSupportedError(f"expression indexes are not supported: {inner.sql()}")
        cols.append(table.column(inner.name))
        desc.append(bool(o.args.get("desc")) if isinstance(o, exp.Ordered) else False)
    if len({c.id for c in cols}) != len(cols):
        raise ProgrammingError("index lists a column twice")
    iname = _new_name(index.this, "index") if index.this is not None else f"{table.name}_{'_'.join(c.name for c in cols)}_idx"
    for other in catalog.list_tables():
        if other.find_index(iname) is not None:
            if ast.args.get("exists"):
                return
            raise ProgrammingError(f'index "{iname}" already exists')
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
    table.next_index_id += 1
    table.indexes.append(idx)
    catalog.update(table)
    _backfill_index(table, idx, env.ctx)


# functions whose value changes between calls: a partial index's predicate must not use them
_VOLATILE = ("now", "rand", "current_", "localtime", "clock_timestamp", "gen_random", "uuid")


def _index_predicate(node: exp.Expression, table: TableDescriptor, env) -> str:
    """The SQL text of a partial index's WHERE, checked: immutable, over this table's columns."""
    for n in node.walk():
        if isinstance(n, (exp.Select, exp.Subquery, exp.Exists)):
            raise NotSupportedError(f'a partial index predicate cannot contain a subquery (index on "{table.name}")')
        if isinstance(n, (exp.Placeholder, exp.Parameter)):
            raise ProgrammingError(f'a partial index predicate cannot contain parameters (index on "{table.name}")')
        if isinstance(n, exp.Func):
            fname = (n.sql_name() if not isinstance(n, exp.Anonymous) else str(n.this)).lower()
            if fname.startswith(_VOLATILE):
                raise ProgrammingError(
                    f'functions in a partial index predicate must be immutable: {n.sql()} (index on "{table.name}")'
                )
        if isinstance(n, exp.Column):
            if n.table:
                n.set("table", None)  # t.a: the index's own table is the only one in scope
            table.column(n.name)
    compile_expr(node, Scope(table_scope(table, table.name)), env)  # unknown functions, type errors
    return node.sql()


def _table_rows(table: TableDescriptor, txn):
    codec = codec_for(table)
    return codec.decode_rows(txn.scan(codec.prefix, prefix_end(codec.prefix)))


def _backfill_index(table: TableDescriptor, idx: IndexDescriptor, ctx: ExecContext) -> None:
    codec = codec_for(table)
    ic = IndexCodec(table, idx, codec.pk_positions)
    txn = ctx.txn
    # Streams the primary index: the entries written go to another key range, which the
    # transaction's merged scan tolerates (it re-positions after buffer changes).
    for n, row in enumerate(_table_rows(table, txn)):
        if n % 512 == 0:
            ctx.check_cancelled()
        if not ic.holds(row):
            continue
        key, value, conditional = ic.entry(row)
        if conditional:
            try:
                txn.put_if_absent(key, value)
            except ConditionFailedError:
                names = ", ".join(table.columns[p].name for p in ic.key_positions)
                vals = ", ".join(str(row[p]) for p in ic.key_positions)
                raise UniqueViolation(
                    f'could not create unique index "{idx.name}": duplicate key value violates unique '
                    f'constraint "{idx.name}" (Key ({names})=({vals}) is duplicated)'
                ) from None
        else:
            txn.put(key, value)


def _drop_index(ast: exp.Drop, catalog) -> None:
    for node in ast.expressions if ast.expressions else ast.args.get("tables") or []:
        iname = _qualified(node)
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
        catalog.update(table)
        start = index_prefix(table.id, idx.id)
        catalog.txn.delete_range(start, prefix_end(start))


# -- DROP --------------------------------------------------------------------------------------


def _refuse_drop_options(ast: exp.Drop, what: str) -> None:
    # views are not tracked as dependents: CASCADE could not do its job (DROP TABLE's CASCADE
    # drops the foreign keys referencing the table, and is handled by `drop`)
    if ast.args.get("cascade") and what != "DROP TABLE":
        raise NotSupportedError(f"{what} ... CASCADE is not supported (sqlkv does not track dependent objects)")
    for opt in ("purge", "force", "sync", "materialized", "temporary", "constraints"):
        if ast.args.get(opt):
            raise NotSupportedError(f"{what} ... {opt.upper()} is not supported")


def drop(ast: exp.Drop, catalog, env) -> None:
    kind = str(ast.args.get("kind") or "").upper()
    _refuse_drop_options(ast, f"DROP {kind}")
    if kind == "INDEX":
        _drop_index(ast, catalog)
        return
    if kind not in ("TABLE", "VIEW"):
        raise NotSupportedError(f"DROP {kind} is not supported")
    nodes = ast.args.get("tables") or ast.expressions
    dropping = {d.id for d in (catalog.find_any(_qualified(n)) for n in nodes) if d is not None and d.kind == "table"}
    for node in nodes:
        name = _qualified(node)
        _refuse_virtual(name, catalog, "drop")
        desc = catalog.find_any(name)
        if desc is None or desc.kind != kind.lower():
            if desc is not None and not ast.args.get("exists"):
                raise ProgrammingError(f'"{name}" is not a {kind.lower()}')
            if ast.args.get("exists"):
                continue
            raise UndefinedTable(f'{"relation" if kind == "TABLE" else "view"} "{name}" does not exist')
        if kind == "TABLE":
            before_drop_table(desc, dropping, bool(ast.args.get("cascade")), catalog)
            start = table_prefix(desc.id)
            catalog.txn.delete_range(start, prefix_end(start))
        catalog.remove(desc)


# -- views -------------------------------------------------------------------------------------


def create_view(ast: exp.Create, catalog, env) -> None:
    target = ast.this
    names = None
    if isinstance(target, exp.Schema):
        names = [_name(i) for i in target.expressions]
        target = target.this
    name = _new_name(target, "view")
    _refuse_table_properties(ast, name)
    query = ast.expression
    existing = catalog.find_any(name)
    if existing is not None:
        if ast.args.get("exists"):
            return
        if not (ast.args.get("replace") and existing.kind == "view"):
            raise ProgrammingError(f'relation "{name}" already exists')
    op = plan_query(query.copy(), catalog, env)  # validates names now rather than at first use
    if names is not None and len(names) != len(op.columns):
        raise ProgrammingError(f'view "{name}" lists {len(names)} column names for {len(op.columns)} columns')
    if existing is not None:
        view = ViewDescriptor(existing.id, name, query.sql(), names)
        catalog.update(view)
    else:
        catalog.create(ViewDescriptor(catalog.allocate_id(), name, query.sql(), names))


# -- ALTER TABLE -------------------------------------------------------------------------------


def alter_table(ast: exp.Alter, catalog, env) -> None:
    name = _qualified(ast.this)
    _refuse_virtual(name, catalog, "alter")
    table = catalog.find_table(name)
    if table is None:
        if ast.args.get("exists"):
            return
        raise UndefinedTable(f'relation "{name}" does not exist')
    if table.virtual is not None:
        raise ProgrammingError(f'cannot alter virtual table "{name}"')
    table = _copy(table)
    for action in ast.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            for cname, cols, ref in _add_column(table, action, catalog, env):
                _alter_add_fk(table, cname, cols, ref, catalog, env)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
            _refuse_drop_options(action, "DROP COLUMN")
            for col_node in action.args.get("tables") or action.expressions:
                _drop_column(table, _name(col_node), bool(action.args.get("exists")), catalog)
        elif isinstance(action, exp.Command) and str(action.this).upper() == "DROP":
            words = str(action.expression).split()
            if words and words[0].upper() == "COLUMN":
                words = words[1:]
            if len(words) != 1:
                raise NotSupportedError(f"unsupported ALTER TABLE action: DROP {action.expression}")
            _drop_column(table, words[0].lower(), False, catalog)
        elif isinstance(action, exp.AddConstraint):
            for node in action.expressions:
                _add_constraint(table, node, None, catalog, env)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "CONSTRAINT":
            for node in action.args.get("tables") or action.expressions:
                _drop_constraint(table, _name(node), bool(action.args.get("exists")), catalog)
        elif isinstance(action, exp.RenameColumn) and action.args.get("constraint"):
            _rename_constraint(table, _name(action.this), _name(action.args["to"]), catalog)
        elif isinstance(action, exp.AlterColumn):
            alter_column(table, action, catalog, env)
        elif isinstance(action, exp.PrimaryKey):
            keys = [(_name(o.this), bool(o.args.get("desc"))) for o in action.expressions]
            alter_primary_key(table, keys, catalog, env)
        elif isinstance(action, exp.RenameColumn):
            _rename_column(table, _name(action.this), _name(action.args["to"]), catalog)
        elif isinstance(action, exp.AlterRename):
            new = _new_name(action.this, "table")
            if catalog.name_taken(new):
                raise ProgrammingError(f'relation "{new}" already exists')
            old = table.name
            table.name = new
            catalog.update(table, old_name=old)
        else:
            raise NotSupportedError(f"unsupported ALTER TABLE action: {action.sql()}")


def _add_constraint(table: TableDescriptor, node: exp.Expression, cname: str | None, catalog, env) -> None:
    """ALTER TABLE ... ADD [CONSTRAINT name] FOREIGN KEY | CHECK | UNIQUE, validating the rows."""
    if isinstance(node, exp.Constraint):
        for inner in node.expressions:
            _add_constraint(table, inner, _name(node.this), catalog, env)
        return
    if cname is not None and cname.lower() in constraint_names(table):
        raise ProgrammingError(f'constraint "{cname}" for relation "{table.name}" already exists')
    txn = catalog.txn
    if isinstance(node, exp.ForeignKey):
        ref = node.args.get("reference")
        if ref is None:
            raise ProgrammingError(f'FOREIGN KEY needs REFERENCES (table "{table.name}")')
        _alter_add_fk(table, cname, [_name(e) for e in node.expressions], ref, catalog, env)
    elif isinstance(node, exp.CheckColumnConstraint):
        chk = CheckDescriptor(cname or f"{table.name}_check{len(table.checks) + 1}", node.this.sql())
        table.checks.append(chk)
        _validate_expressions(table, env)
        fn = compile_expr(sqlglot.parse_one(chk.expr_sql), Scope(table_scope(table, table.name)), env)
        for row in _table_rows(table, txn):
            if fn(row) is False:
                raise CheckViolation(f'check constraint "{chk.name}" of relation "{table.name}" is violated by some row')
        catalog.update(table)
    elif isinstance(node, exp.UniqueColumnConstraint):
        _refuse_key_options(node, f'table "{table.name}"')
        if node.this is None:
            raise ProgrammingError("UNIQUE constraint needs a column list")
        cols = [table.column(n) for n, _ in _key_list(node.this, {})]
        iname = cname or f"{table.name}_{'_'.join(c.name for c in cols)}_key"
        _check_index_name(table, iname)
        idx = IndexDescriptor(table.next_index_id, iname, [c.id for c in cols], [False] * len(cols), True)
        table.next_index_id += 1
        table.indexes.append(idx)
        catalog.update(table)
        _backfill_index(table, idx, env.ctx)
    elif isinstance(node, exp.PrimaryKey):
        raise NotSupportedError(f'table "{table.name}" has a primary key; use ALTER TABLE ... ALTER PRIMARY KEY '
                                "USING COLUMNS (...) to change it")
    else:
        raise NotSupportedError(f"unsupported constraint in ALTER TABLE ... ADD: {node.sql()}")


def _alter_add_fk(table: TableDescriptor, cname: str | None, cols: list[str], ref: exp.Reference, catalog,
                  env) -> None:
    parent = declare_foreign_key(table, cname, cols, ref, catalog, lambda t, idx: _backfill_index(t, idx, env.ctx))
    validate_existing_rows(table, table.foreign_keys[-1], parent, catalog.txn)
    catalog.update(table)
    if parent is not table:
        catalog.update(parent)


def _rename_constraint(table: TableDescriptor, old: str, new: str, catalog) -> None:
    if new.lower() in constraint_names(table):
        raise ProgrammingError(f'constraint "{new}" for relation "{table.name}" already exists')
    named = [*table.foreign_keys, *table.checks, *[i for i in table.all_indexes() if i.unique]]
    for item in named:
        if item.name.lower() == old.lower():
            item.name = new
            catalog.update(table)
            return
    raise UndefinedObject(f'constraint "{old}" of relation "{table.name}" does not exist')


def _drop_constraint(table: TableDescriptor, cname: str, if_exists: bool, catalog) -> None:
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


def _add_column(table: TableDescriptor, cd: exp.ColumnDef, catalog, env) -> list:
    """Add the column; return its REFERENCES clauses for the caller to declare."""
    tb = _TableBuilder(table.name, table.id)
    col = _column_def(cd, tb, table.next_column_id)
    if table.find_column(col.name) is not None:
        if cd.args.get("exists"):
            return []
        raise ProgrammingError(f'column "{col.name}" of relation "{table.name}" already exists')
    if tb.pk is not None:
        raise NotSupportedError("cannot add a PRIMARY KEY column")
    table.next_column_id += 1
    old_table = TableDescriptor.from_dict(table.to_dict())
    table.columns.append(col)
    table.checks.extend(tb.checks)
    for cname, cols in tb.uniques:
        iname = cname or f"{table.name}_{col.name}_key"
        _check_index_name(table, iname)
        table.indexes.append(IndexDescriptor(table.next_index_id, iname, [col.id], [False], True))
        table.next_index_id += 1
    _validate_expressions(table, env)
    default = None
    if col.default_sql is not None:
        default = assign_cast(compile_expr(sqlglot.parse_one(col.default_sql), Scope([]), env)(()), col.type, col.name)
    txn = catalog.txn
    new_indexes = [ic for ic in codec_for(table).indexes if col.id in ic.index.column_ids]
    if default is None and not new_indexes and not tb.checks:
        # absent = NULL: no row is rewritten; only an existing row makes NOT NULL impossible
        if not col.nullable and next(iter(_table_rows(old_table, txn)), None) is not None:
            raise NotNullViolation(
                f'column "{col.name}" of relation "{table.name}" contains null values (add a DEFAULT or allow NULL)'
            )
        catalog.update(table)
        return tb.fks
    # the rewrite puts keys inside the range being read, so the rows are read first
    rows = list(_table_rows(old_table, txn))
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
    if sum(1 for c in table.columns if not c.hidden) == 1 and not col.hidden:
        raise ProgrammingError(f'cannot drop the only column of table "{table.name}"')
    table.columns = [c for c in table.columns if c.id != col.id]
    for fam in table.families:
        fam.column_ids = [c for c in fam.column_ids if c != col.id]
    # The column's values stay in old rows under its (never reused) id and are ignored.
    catalog.update(table)


def _mentions(expr_sql: str | None, column: str) -> bool:
    if expr_sql is None:
        return False
    return any(c.name.lower() == column.lower() for c in sqlglot.parse_one(expr_sql).find_all(exp.Column))


def _renamed(expr_sql: str, old: str, new: str) -> str:
    tree = sqlglot.parse_one(expr_sql)
    for c in tree.find_all(exp.Column):
        if c.name.lower() == old.lower():
            c.set("this", exp.to_identifier(new))
    return tree.sql()


def _rename_column(table: TableDescriptor, old: str, new: str, catalog) -> None:
    col = table.column(old)
    if table.find_column(new) is not None:
        raise ProgrammingError(f'column "{new}" of relation "{table.name}" already exists')
    for chk in table.checks:
        chk.expr_sql = _renamed(chk.expr_sql, col.name, new)
    for idx in table.indexes:  # a partial index's predicate names columns too
        if _mentions(idx.predicate, col.name):
            idx.predicate = _renamed(idx.predicate, col.name, new)
    col.name = new
    catalog.update(table)
