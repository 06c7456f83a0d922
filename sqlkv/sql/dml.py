"""INSERT / UPSERT / REPLACE, UPDATE, DELETE and TRUNCATE plans.

``UPDATE users SET email = lower(email) WHERE id BETWEEN ? AND ?`` is planned once per SQL
text: `plan_table_access` picks the spans (here a primary-key range), the SET expressions and
the remaining filter are compiled against the table's scope. Each execution then:

1. reads the target rows through the access operator and computes every new row (assignment
   casts, NOT NULL, CHECK) -- all target rows are collected before any write, so the scan
   never sees the statement's own writes (the "Halloween problem"); the transaction buffers
   every write in memory anyway, so this costs the same order of memory;
2. deletes, for all rows, the KV entries whose keys change (`RowWriter.remove_changed`);
3. writes the new entries, conditionally where a key moved (`RowWriter.add_changed`), so
   ``SET id = id + 1`` works whatever the row order, and a real duplicate fails.

The session wraps each execution in a savepoint, so a failure leaves no partial writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.dmlcommon import (
    Defaults,
    Returning,
    RowChecker,
    StatementResult,
    compile_expr,
    forget_auto_counter,
    split_conjuncts,
    target_table,
)
from sqlkv.sql.exec.operator import Operator, counted
from sqlkv.sql.exec.scan import codec_for
from sqlkv.sql.plan.access import plan_table_access, table_scope
from sqlkv.sql.rowwriter import DuplicatePrimaryKey, RowWriter
from sqlkv.storage.kv import prefix_end
from sqlkv.encoding.keys import index_prefix

_MISSING = object()
_DEFAULT = object()


class PlanNode(Operator):
    """A fixed line in EXPLAIN output for statements that are not operators themselves."""

    def __init__(self, text: str, children: list[Operator] | None = None) -> None:
        self.text = text
        self.columns = []
        self._children = children or []

    def children(self) -> list[Operator]:
        return self._children

    def describe(self) -> str:
        return self.text


def _touch(ctx: ExecContext, table_id: int) -> None:
    if ctx.catalog is not None:
        ctx.catalog.touch(table_id)


def _is_default(node: exp.Expression) -> bool:
    return isinstance(node, (exp.Var, exp.Column)) and node.name.upper() == "DEFAULT" and not getattr(node, "table", "")


def _predicate(conjuncts: list[exp.Expression], scope: Scope, env):
    if not conjuncts:
        return None
    from sqlkv.sql.expr import compile_predicate

    fns = [compile_predicate(c, scope, env) for c in conjuncts]
    if len(fns) == 1:
        return fns[0]
    return lambda r: all(f(r) for f in fns)


class _Assignments:
    """``SET col = expr, ...`` compiled against a scope."""

    def __init__(self, nodes: list[exp.Expression], table, scope: Scope, env, defaults: Defaults) -> None:
        self.items: list[tuple[int, Any]] = []
        seen = set()
        for node in nodes:
            if not isinstance(node, exp.EQ) or not isinstance(node.this, exp.Column):
                raise ProgrammingError(f"unsupported SET clause: {node.sql()}")
            col = table.column(node.this.name)
            pos = table.columns.index(col)
            if col.hidden:
                raise ProgrammingError(f'column "{col.name}" cannot be assigned')
            if pos in seen:
                raise ProgrammingError(f'multiple assignments to same column "{col.name}"')
            seen.add(pos)
            value = node.expression
            if _is_default(value):
                self.items.append((pos, lambda r, p=pos: defaults.value(p)))
            else:
                self.items.append((pos, compile_expr(value, scope, env)))

    def apply(self, row: tuple, source: tuple | None = None) -> list:
        src = row if source is None else source
        new = list(row)
        for pos, fn in self.items:
            new[pos] = fn(src)
        return new


class InsertPlan:
    """INSERT (VALUES, SELECT, DEFAULT VALUES), ON CONFLICT, UPSERT, INSERT OR REPLACE/IGNORE."""

    def __init__(self, ast: exp.Insert, catalog, env, upsert: bool = False) -> None:
        self.table, self.alias = target_table(ast.this, catalog)
        table = self.table
        self.kind = "UPSERT" if upsert else "INSERT"
        self.codec = codec_for(table)
        self.env = env
        if isinstance(ast.this, exp.Schema) and ast.this.expressions:
            self.targets = [table.columns.index(table.column(i.name)) for i in ast.this.expressions]
        else:
            self.targets = [i for i, c in enumerate(table.columns) if not c.hidden]
        if len(set(self.targets)) != len(self.targets):
            raise ProgrammingError("column specified more than once in INSERT")
        self.defaults = Defaults(table, env)
        self.checker = RowChecker(table, self.alias, env)
        self.returning = Returning(ast.args.get("returning"), table, self.alias, env)
        self.columns: list[Column] | None = self.returning.columns
        self._plan_source(ast, catalog, env)
        self._plan_conflict(ast, env, upsert)

    # -- planning --------------------------------------------------------------------------

    def _plan_source(self, ast: exp.Insert, catalog, env) -> None:
        self.value_rows: list[list[Any]] | None = None
        self.query_op: Operator | None = None
        source = ast.expression
        if ast.args.get("default") or source is None:
            self.value_rows = [[]]
            self.targets_for_rows = []
            return
        self.targets_for_rows = self.targets
        if isinstance(source, exp.Values):
            empty = Scope([])
            rows = []
            for tup in source.expressions:
                items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
                self._check_width(len(items))
                rows.append([_DEFAULT if _is_default(e) else compile_expr(e, empty, env) for e in items])
            self.value_rows = rows
            return
        from sqlkv.sql.plan.select import plan_query

        query = source.copy()
        with_ = ast.args.get("with_")
        if with_ is not None and isinstance(query, exp.Query) and query.args.get("with_") is None:
            query.set("with_", with_.copy())  # WITH x AS (...) INSERT ... SELECT ... FROM x
        self.query_op = plan_query(query, catalog, env)
        self._check_width(len(self.query_op.columns))

    def _check_width(self, n: int) -> None:
        if n > len(self.targets):
            raise ProgrammingError(f'INSERT into "{self.table.name}" has more expressions than target columns')
        if n < len(self.targets):
            raise ProgrammingError(f'INSERT into "{self.table.name}" has more target columns than expressions')

    def _plan_conflict(self, ast: exp.Insert, env, upsert: bool) -> None:
        table = self.table
        self.mode = "error"
        self.arbiters: list[Any] = []  # None = primary key, else an IndexCodec
        self.update: _Assignments | None = None
        self.update_where = None
        alternative = str(ast.args.get("alternative") or "").upper()
        conflict = ast.args.get("conflict")
        all_arbiters = [None, *[ic for ic in self.codec.indexes if ic.unique]]
        if upsert:
            self.mode = "update"
            self.arbiters = [None]
            pk = set(self.codec.pk_positions)
            scope = self._conflict_scope()
            n = len(table.columns)
            self.update = _Assignments([], table, scope, env, self.defaults)
            self.update.items = [(p, lambda r, p=p, n=n: r[n + p]) for p in self.targets if p not in pk]
            return
        if alternative == "REPLACE":
            self.mode = "replace"
            self.arbiters = all_arbiters
            return
        if alternative == "IGNORE":
            self.mode = "nothing"
            self.arbiters = all_arbiters
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
            self.arbiters = [self._arbiter_for(names)]
        elif cname is not None:
            self.arbiters = [self._arbiter_named(cname.name)]
        else:
            self.arbiters = all_arbiters
        if "NOTHING" in action:
            self.mode = "nothing"
            return
        if not keys and cname is None:
            raise ProgrammingError("ON CONFLICT DO UPDATE requires a conflict target, e.g. ON CONFLICT (id)")
        self.mode = "update"
        scope = self._conflict_scope()
        self.update = _Assignments(conflict.expressions, table, scope, env, self.defaults)
        where = conflict.args.get("where")
        self.update_where = _predicate(split_conjuncts(where), scope, env) if where else None

    def _conflict_scope(self) -> Scope:
        cols = table_scope(self.table, self.alias)
        excluded = [Column(c.name, "excluded", c.type, c.hidden) for c in cols]
        return Scope(cols + excluded)

    def _arbiter_for(self, names: list[str]):
        table = self.table
        want = {table.columns.index(table.column(n)) for n in names}
        if want == set(self.codec.pk_positions):
            return None
        for ic in self.codec.indexes:
            if ic.unique and set(ic.key_positions) == want and ic.predicate is None:
                return ic
        # like PostgreSQL without ON CONFLICT (...) WHERE: a partial unique index is no arbiter
        partial = [ic.name for ic in self.codec.indexes if ic.unique and set(ic.key_positions) == want]
        hint = f" (unique index \"{partial[0]}\" is partial: it is not an ON CONFLICT target)" if partial else ""
        raise ProgrammingError(
            "there is no unique or exclusion constraint matching the ON CONFLICT specification" + hint
        )

    def _arbiter_named(self, name: str):
        if self.table.primary_index.name.lower() == name.lower():
            return None
        for ic in self.codec.indexes:
            if ic.unique and ic.name.lower() == name.lower():
                if ic.predicate is not None:
                    raise ProgrammingError(f'"{ic.name}" is a partial unique index, not a constraint: '
                                           "it cannot be an ON CONFLICT target")
                return ic
        raise ProgrammingError(f'constraint "{name}" for table "{self.table.name}" does not exist')

    # -- execution -------------------------------------------------------------------------

    def _source_rows(self, ctx: ExecContext) -> Iterator[list[Any]]:
        if self.value_rows is not None:
            for fns in self.value_rows:
                yield [_DEFAULT if f is _DEFAULT else f(()) for f in fns]
            return
        assert self.query_op is not None
        yield from [list(r) for r in self.query_op.rows(ctx)]  # materialised: see module doc

    def build_row(self, values: list[Any], txn) -> tuple:
        n = len(self.table.columns)
        row: list[Any] = [_MISSING] * n
        for pos, v in zip(self.targets_for_rows, values):
            row[pos] = v
        for i in range(n):
            if row[i] is _MISSING or row[i] is _DEFAULT:
                row[i] = None if i in self.defaults.auto and self.defaults.fns[i] is None else self.defaults.value(i)
        self.checker.cast_row(row)
        self._auto_assigned = False
        for i in self.defaults.auto:
            if row[i] is None:
                row[i] = self.defaults.next_auto(txn)
                self._auto_assigned = True
            elif isinstance(row[i], int):
                self.defaults.saw_value(txn, row[i])
        out = tuple(row)
        self.checker.check(out)
        return out

    def execute(self, ctx: ExecContext) -> StatementResult:
        txn = ctx.txn
        _touch(ctx, self.table.id)
        writer = RowWriter(self.table, self.codec, txn)
        count = 0
        last_id = None
        returned: list[tuple] = []
        auto = self.defaults.auto
        for values in self._source_rows(ctx):
            row = self.build_row(values, txn)
            try:
                written = self._write(writer, row, txn)
            except DuplicatePrimaryKey:
                # an auto-assigned id can collide with a key written since the counter was
                # read (e.g. an UPDATE moved a row): re-read the maximum once and retry
                if not self._auto_assigned or len(auto) != 1:
                    raise
                row = list(row)
                row[auto[0]] = self.defaults.next_auto(txn, refresh=True)
                written = self._write(writer, tuple(row), txn)
            if written is None:
                continue
            count += 1
            if auto:
                last_id = written[auto[0]]
            if self.returning.columns is not None:
                returned.append(self.returning.project(written))
        return StatementResult(returned if self.columns is not None else None, count, last_id)

    def _write(self, writer: RowWriter, row: tuple, txn) -> tuple | None:
        if self.mode == "error":
            writer.insert(row)
            return row
        if self.mode == "replace":
            for arb in self.arbiters:
                existing = self._conflicting(arb, row, txn)
                if existing is not None:
                    writer.delete(existing)
            writer.insert(row)
            return row
        existing = None
        for arb in self.arbiters:
            existing = self._conflicting(arb, row, txn)
            if existing is not None:
                break
        if existing is None:
            writer.insert(row)
            return row
        if self.mode == "nothing":
            return None
        assert self.update is not None
        combined = existing + row
        if self.update_where is not None and not self.update_where(combined):
            return None
        new = self.update.apply(existing, combined)
        self.checker.cast_row(new)
        new_t = tuple(new)
        self.checker.check(new_t)
        writer.update(existing, new_t)
        return new_t

    def _conflicting(self, arbiter, row: tuple, txn) -> tuple | None:
        codec = self.codec
        if arbiter is None:
            return codec.fetch(txn, codec.pk_prefix(codec.pk_values(row)))
        if not arbiter.holds(row):
            return None  # outside a partial index's predicate: nothing to conflict with
        key, _value, conditional = arbiter.entry(row)
        if not conditional:
            return None  # a NULL in a unique column never conflicts
        stored = txn.get(key)
        if stored is None:
            return None
        partial = arbiter.decode(key, stored)
        return codec.fetch(txn, codec.pk_prefix([partial[p] for p in codec.pk_positions]))

    def explain_root(self) -> Operator:
        children = [self.query_op] if self.query_op is not None else []
        text = f"{self.kind.lower()} {self.table.name}"
        if self.mode != "error":
            text += f" (on conflict: {self.mode})"
        if self.value_rows is not None:
            text += f" values ({len(self.value_rows)} row{'s' if len(self.value_rows) != 1 else ''})"
        return PlanNode(text, children)


class _TargetRows:
    """The rows an UPDATE/DELETE touches: access path + remaining filter."""

    def __init__(self, ast: exp.Expression, catalog, env) -> None:
        if ast.args.get("from_") or ast.args.get("using"):
            raise NotSupportedError("UPDATE ... FROM / DELETE ... USING is not supported")
        if ast.args.get("with_") or ast.args.get("with"):
            # it was dropped, and its names then failed as unknown relations
            raise NotSupportedError("WITH before UPDATE/DELETE is not supported; use a subquery")
        if ast.args.get("order") or ast.args.get("limit"):
            raise NotSupportedError("ORDER BY / LIMIT on UPDATE and DELETE is not supported")
        self.table, self.alias = target_table(ast.this, catalog)
        self.scope = Scope(table_scope(self.table, self.alias))
        conjuncts = split_conjuncts(ast.args.get("where"))
        self.access = plan_table_access(self.table, self.alias, conjuncts, self.scope, env)
        self.filter = _predicate(self.access.remaining, self.scope, env)
        self.filter_sql = " AND ".join(c.sql() for c in self.access.remaining)

    def rows(self, ctx: ExecContext) -> list[tuple]:
        flt = self.filter
        rows = counted(self.access.operator, ctx)
        return [r for r in rows if flt(r)] if flt is not None else list(rows)

    def explain_children(self) -> list[Operator]:
        scan = self.access.operator
        if self.filter_sql:
            return [PlanNode(f"filter {self.filter_sql}", [scan])]
        return [scan]


class UpdatePlan:
    def __init__(self, ast: exp.Update, catalog, env) -> None:
        self.target = _TargetRows(ast, catalog, env)
        table = self.target.table
        self.table = table
        self.codec = codec_for(table)
        self.defaults = Defaults(table, env)
        self.sets = _Assignments(ast.expressions, table, self.target.scope, env, self.defaults)
        self.checker = RowChecker(table, self.target.alias, env)
        self.returning = Returning(ast.args.get("returning"), table, self.target.alias, env)
        self.columns = self.returning.columns

    def execute(self, ctx: ExecContext) -> StatementResult:
        _touch(ctx, self.table.id)
        changes = []
        for old in self.target.rows(ctx):
            new = self.sets.apply(old)
            self.checker.cast_row(new)
            new_t = tuple(new)
            self.checker.check(new_t)
            changes.append((old, new_t))
        writer = RowWriter(self.table, self.codec, ctx.txn)
        forget_auto_counter(ctx.txn, self.table.id)
        for old, new in changes:
            if old != new:
                writer.remove_changed(old, new)
        for old, new in changes:
            if old != new:
                writer.add_changed(old, new)
        rows = [self.returning.project(n) for _, n in changes] if self.columns is not None else None
        return StatementResult(rows, len(changes))

    def explain_root(self) -> Operator:
        sets = ", ".join(self.table.columns[p].name for p, _ in self.sets.items)
        return PlanNode(f"update {self.table.name} set {sets}", self.target.explain_children())


class DeletePlan:
    def __init__(self, ast: exp.Delete, catalog, env) -> None:
        self.target = _TargetRows(ast, catalog, env)
        self.table = self.target.table
        self.codec = codec_for(self.table)
        self.returning = Returning(ast.args.get("returning"), self.table, self.target.alias, env)
        self.columns = self.returning.columns

    def execute(self, ctx: ExecContext) -> StatementResult:
        _touch(ctx, self.table.id)
        victims = self.target.rows(ctx)
        writer = RowWriter(self.table, self.codec, ctx.txn)
        forget_auto_counter(ctx.txn, self.table.id)
        for row in victims:
            writer.delete(row)
        rows = [self.returning.project(r) for r in victims] if self.columns is not None else None
        return StatementResult(rows, len(victims))

    def explain_root(self) -> Operator:
        return PlanNode(f"delete {self.table.name}", self.target.explain_children())


class TruncatePlan:
    columns = None

    def __init__(self, ast: exp.TruncateTable, catalog, env) -> None:
        # TRUNCATE always restarts the auto-assigned key (RESTART IDENTITY); no dependents to cascade to
        if str(ast.args.get("identity") or "").upper() == "CONTINUE":
            raise NotSupportedError("TRUNCATE ... CONTINUE IDENTITY is not supported (TRUNCATE restarts row ids)")
        if str(ast.args.get("option") or "").upper() == "CASCADE":
            raise NotSupportedError("TRUNCATE ... CASCADE is not supported (sqlkv does not track dependent objects)")
        self.tables = [target_table(t, catalog)[0] for t in ast.expressions]

    def execute(self, ctx: ExecContext) -> StatementResult:
        for table in self.tables:
            _touch(ctx, table.id)
            forget_auto_counter(ctx.txn, table.id)
            for index in table.all_indexes():
                start = index_prefix(table.id, index.id)
                ctx.txn.delete_range(start, prefix_end(start))
        return StatementResult(None, -1)

    def explain_root(self) -> Operator:
        return PlanNode("truncate " + ", ".join(t.name for t in self.tables))
