"""DROP TABLE/VIEW/INDEX and CREATE [OR REPLACE] VIEW."""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.descriptors import ViewDescriptor
from sqlkv.encoding.keys import table_prefix
from sqlkv.errors import DuplicateTable, NotSupportedError, ProgrammingError, UndefinedTable
from sqlkv.sql.ddl.foreign_keys import before_drop_table
from sqlkv.sql.ddl.indexes import drop_index
from sqlkv.sql.ddl.sequences import drop_owned_sequences
from sqlkv.sql.ddl.names import ident, new_name, qualified_name, refuse_table_properties, refuse_virtual
from sqlkv.sql.plan.select import plan_query
from sqlkv.storage.kv import prefix_end

# -- DROP --------------------------------------------------------------------------------------


def refuse_drop_options(ast: exp.Drop, what: str) -> None:
    # views are not tracked as dependents: CASCADE could not do its job (DROP TABLE's CASCADE
    # drops the foreign keys referencing the table, and is handled by `drop`)
    if ast.args.get("cascade") and what != "DROP TABLE":
        raise NotSupportedError(f"{what} ... CASCADE is not supported (sqlkv does not track dependent objects)")
    for opt in ("purge", "force", "sync", "materialized", "temporary", "constraints"):
        if ast.args.get(opt):
            raise NotSupportedError(f"{what} ... {opt.upper()} is not supported")


def drop(ast: exp.Drop, catalog, env) -> None:
    kind = str(ast.args.get("kind") or "").upper()
    refuse_drop_options(ast, f"DROP {kind}")
    if kind == "INDEX":
        drop_index(ast, catalog)
        return
    if kind not in ("TABLE", "VIEW"):
        raise NotSupportedError(f"DROP {kind} is not supported")
    nodes = ast.args.get("tables") or ast.expressions
    dropping = {d.id for d in (catalog.find_any(qualified_name(n)) for n in nodes) if d is not None and d.kind == "table"}
    for node in nodes:
        name = qualified_name(node)
        refuse_virtual(name, catalog, "drop")
        desc = catalog.find_any(name)
        if desc is None or desc.kind != kind.lower():
            if desc is not None and not ast.args.get("exists"):
                raise ProgrammingError(f'"{name}" is not a {kind.lower()}')
            if ast.args.get("exists"):
                continue
            raise UndefinedTable(f'{"relation" if kind == "TABLE" else "view"} "{name}" does not exist')
        if kind == "TABLE":
            before_drop_table(desc, dropping, bool(ast.args.get("cascade")), catalog)
            drop_owned_sequences(catalog, desc.id)
            start = table_prefix(desc.id)
            catalog.txn.delete_range(start, prefix_end(start))
        catalog.remove(desc)


# -- views -------------------------------------------------------------------------------------


def create_view(ast: exp.Create, catalog, env) -> None:
    target = ast.this
    names = None
    if isinstance(target, exp.Schema):
        names = [ident(i) for i in target.expressions]
        target = target.this
    name = new_name(target, "view")
    refuse_table_properties(ast, name)
    query = ast.expression
    existing = catalog.find_any(name)
    if existing is not None:
        if ast.args.get("exists"):
            return
        if not (ast.args.get("replace") and existing.kind == "view"):
            raise DuplicateTable(f'relation "{name}" already exists')
    op = plan_query(query.copy(), catalog, env)  # validates names now rather than at first use
    if names is not None and len(names) != len(op.columns):
        raise ProgrammingError(f'view "{name}" lists {len(names)} column names for {len(op.columns)} columns')
    if existing is not None:
        view = ViewDescriptor(existing.id, name, query.sql(), names)
        catalog.update(view)
    else:
        catalog.create(ViewDescriptor(catalog.allocate_id(), name, query.sql(), names))
