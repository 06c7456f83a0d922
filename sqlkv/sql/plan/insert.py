"""Planning INSERT (VALUES, SELECT, DEFAULT VALUES), ON CONFLICT, UPSERT, INSERT OR REPLACE/IGNORE.

``INSERT INTO users (id, email) VALUES (?, lower(?)) ON CONFLICT (email) DO UPDATE SET
email = excluded.email`` becomes, once per SQL text, an `sqlkv.sql.exec.insert.Insert`:
the target positions (``id``, ``email``), the VALUES items compiled over an empty scope, the
table's defaults, checks and RETURNING, and the conflict handling -- here mode ``update`` with
the arbiter ``users_email_key`` and the SET list compiled over the existing row followed by the
proposed (``excluded``) row. EXPLAIN prints the operator as ``insert users (on conflict:
update) values (1 row)``.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError, UndefinedObject
from sqlkv.sql.context import Column, Scope, table_scope
from sqlkv.sql.exec.insert import DEFAULT, Insert
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.write import Assignments
from sqlkv.sql.expr import compile_for_column, compile_predicate
from sqlkv.sql.expr.compile import param_key
from sqlkv.sql.plan.dml_parts import refuse_generated_always
from sqlkv.sql.plan.dml_parts import assignments, column_defaults, is_default, returning, row_checker, target_table
from sqlkv.sql.plan.foreign_keys import fk_plan
from sqlkv.sql.plan.joins import and_predicates
from sqlkv.sql.plan.names import split_conjuncts
from sqlkv.sql.plan.select import plan_query


def plan_insert(ast: exp.Insert, catalog, env, upsert: bool = False, overriding: bool = False) -> Insert:
    table, alias = target_table(ast.this, catalog)
    if isinstance(ast.this, exp.Schema) and ast.this.expressions:
        targets = [table.columns.index(table.column(i.name)) for i in ast.this.expressions]
    else:
        targets = [i for i, c in enumerate(table.columns) if not c.hidden and c.computed is None]  # generated: never given (SQLite)
    if len(set(targets)) != len(targets):
        raise ProgrammingError("column specified more than once in INSERT")
    defaults = column_defaults(table, env)
    checker = row_checker(table, alias, env)
    ret = returning(ast.args.get("returning"), table, alias, env)
    value_rows, query = _source(ast, table, targets, catalog, env)
    refuse_generated_always(table, targets, value_rows, query is not None, overriding)
    default_values = query is None and value_rows == [[]]  # DEFAULT VALUES: no source values
    kind = "UPSERT" if upsert else "INSERT"
    op = Insert(table, kind, [] if default_values else targets, value_rows, query, defaults, checker, ret)
    _plan_conflict(op, ast, alias, targets, env, upsert)
    op.fk = fk_plan(table, catalog, env)
    op.param_keys = _param_keys(ast.expression, len(targets))
    return op


def _param_keys(source, width: int) -> list[int] | None:
    """The parameter index of each VALUES item when the source is one row of positional
    placeholders (``VALUES (?, ?, ?)``): executemany can then bind a batch without closures."""
    if not isinstance(source, exp.Values) or len(source.expressions) != 1:
        return None
    row = source.expressions[0]
    items = row.expressions if isinstance(row, exp.Tuple) else [row]
    if len(items) != width or not all(isinstance(e, (exp.Placeholder, exp.Parameter)) for e in items):
        return None
    keys = [param_key(e) for e in items]
    return keys if all(isinstance(k, int) for k in keys) else None  # type: ignore[return-value]


def _source(ast: exp.Insert, table, targets: list[int], catalog, env) -> tuple[list | None, Operator | None]:
    """(compiled VALUES rows, None) or (None, the planned SELECT)."""
    source = ast.expression
    if ast.args.get("default") or source is None:
        return [[]], None

    def check_width(n: int) -> None:
        if n > len(targets):
            raise ProgrammingError(f'INSERT into "{table.name}" has more expressions than target columns')
        if n < len(targets):
            raise ProgrammingError(f'INSERT into "{table.name}" has more target columns than expressions')

    if isinstance(source, exp.Values):
        empty = Scope([])
        rows = []
        for tup in source.expressions:
            items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
            check_width(len(items))
            types = [table.columns[t].type for t in targets]
            rows.append([DEFAULT if is_default(e) else compile_for_column(e, typ, empty, env)
                         for e, typ in zip(items, types)])
        return rows, None
    query = source.copy()
    with_ = ast.args.get("with_")
    if with_ is not None and isinstance(query, exp.Query) and query.args.get("with_") is None:
        query.set("with_", with_.copy())  # WITH x AS (...) INSERT ... SELECT ... FROM x
    op = plan_query(query, catalog, env)
    check_width(len(op.columns))
    return None, op


def _plan_conflict(op: Insert, ast: exp.Insert, alias: str, targets: list[int], env, upsert: bool) -> None:
    """Set the operator's conflict mode, arbiters and DO UPDATE list."""
    table = op.table
    codec = op.codec
    alternative = str(ast.args.get("alternative") or "").upper()
    conflict = ast.args.get("conflict")
    all_arbiters = [None, *[ic for ic in codec.indexes if ic.unique]]
    if upsert:
        op.mode = "update"
        op.arbiters = [None]
        pk = set(codec.pk_positions)
        n = len(table.columns)
        op.update = Assignments([(p, lambda r, p=p, n=n: r[n + p]) for p in targets if p not in pk])
        return
    if alternative in ("REPLACE", "IGNORE"):
        op.mode = "replace" if alternative == "REPLACE" else "nothing"
        op.arbiters = all_arbiters
        return
    if conflict is None:
        return
    if conflict.args.get("duplicate"):
        raise NotSupportedError("ON DUPLICATE KEY UPDATE is not supported; use ON CONFLICT")
    action = str(conflict.args.get("action") or "").upper()
    keys = conflict.args.get("conflict_keys") or []
    if conflict.args.get("index_predicate") is not None:
        raise NotSupportedError(
            "ON CONFLICT (...) WHERE is not supported (partial unique indexes are no ON CONFLICT target)"
        )
    cname = conflict.args.get("constraint")
    if keys:
        names = [k.this.name if isinstance(k, exp.Ordered) else k.name for k in keys]
        op.arbiters = [_arbiter_for(op, names)]
    elif cname is not None:
        op.arbiters = [_arbiter_named(op, cname.name)]
    else:
        op.arbiters = all_arbiters
    if "NOTHING" in action:
        op.mode = "nothing"
        return
    if not keys and cname is None:
        raise ProgrammingError("ON CONFLICT DO UPDATE requires a conflict target, e.g. ON CONFLICT (id)")
    op.mode = "update"
    cols = table_scope(table, alias)
    scope = Scope(cols + [Column(c.name, "excluded", c.type, c.hidden) for c in cols])
    op.update = assignments(conflict.expressions, table, scope, env, op.defaults, alias)
    where = conflict.args.get("where")
    if where is not None:
        op.update_where = and_predicates([compile_predicate(c, scope, env) for c in split_conjuncts(where)])


def _arbiter_for(op: Insert, names: list[str]):
    table, codec = op.table, op.codec
    want = {table.columns.index(table.column(n)) for n in names}
    if want == set(codec.pk_positions):
        return None
    for ic in codec.indexes:
        if ic.unique and set(ic.key_positions) == want and ic.predicate is None:
            return ic
    # like PostgreSQL without ON CONFLICT (...) WHERE: a partial unique index is no arbiter
    partial = [ic.name for ic in codec.indexes if ic.unique and set(ic.key_positions) == want]
    hint = f" (unique index \"{partial[0]}\" is partial: it is not an ON CONFLICT target)" if partial else ""
    raise ProgrammingError("there is no unique or exclusion constraint matching the ON CONFLICT specification" + hint)


def _arbiter_named(op: Insert, name: str):
    if op.table.primary_index.name.lower() == name.lower():
        return None
    for ic in op.codec.indexes:
        if ic.unique and ic.name.lower() == name.lower():
            if ic.predicate is not None:
                raise ProgrammingError(f'"{ic.name}" is a partial unique index, not a constraint: '
                                       "it cannot be an ON CONFLICT target")
            return ic
    raise UndefinedObject(f'constraint "{name}" for table "{op.table.name}" does not exist')
