"""The plan cache: one plan per SQL text, reused while the schema it was planned on holds.

``cursor.execute("SELECT name FROM users WHERE id = ?", (7,))`` a thousand times parses and
plans once: the cache maps the SQL text to a `Prepared` (the plan and its `ExecContext`); each
execution only binds the parameters, the transaction and the time into that context. A plan is
valid for the schema version it was planned under: a committed DDL bumps the version and the
next execution plans again. A transaction that changed the schema itself plans privately.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.fastpath import IndexRead, compile_index_read
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.expr import CompileEnv
from sqlkv.sql.expr.sequences import changes_sequences
from sqlkv.sql.expr.temporal import utc_now
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.plan.select import QueryPlanner
from sqlkv.sql.plan.statement import plan_statement

PLAN_CACHE_SIZE = 256


class Prepared:
    """A plan with the context its compiled expressions read at run time."""

    def __init__(self, stmt: ParsedStatement, plan: Operator, env: CompileEnv, version: int) -> None:
        self.stmt = stmt
        self.plan = plan
        self.env = env
        self.ctx: ExecContext = env.ctx
        self.version = version
        self.busy = False  # a lazy SELECT result still reads through this plan's context
        # a SELECT calling nextval/setval runs to the end when executed (as in PostgreSQL), not
        # only as far as its rows are fetched
        calls = stmt.sequence_calls  # known from the parse's one walk, for texts it parsed
        self.eager = calls if calls is not None else stmt.ast is not None and changes_sequences(stmt.ast)
        # a SELECT that is one equality read of an index: the session runs it directly
        self.read: IndexRead | None = (
            compile_index_read(plan) if stmt.kind == "SELECT" and not self.eager else None)
        # TIMESTAMPTZ columns: rows are shown in the session's time zone (timezone.rows_in_zone)
        self.zoned = any(c.type is not None and c.type.tz for c in plan.columns or ())


class PlanCache:
    """Least-recently-used plans by SQL text (one cache per session: plans hold contexts)."""

    def __init__(self, size: int = PLAN_CACHE_SIZE) -> None:
        self.size = size
        self._plans: OrderedDict[str, Prepared] = OrderedDict()

    def clear(self) -> None:
        self._plans.clear()

    def get(self, sql: str) -> Prepared | None:
        return self._plans.get(sql)

    def lookup(self, stmt: ParsedStatement, catalog, schema_version: int) -> Prepared | None:
        """The cached plan for ``stmt``'s text if it is valid and free, else None."""
        cached = self._plans.get(stmt.sql)
        # The version the catalog's snapshot reflects: a transaction that began before a DDL
        # committed still reads the old descriptors, so its plans must not pass for new ones.
        if (cached is None or cached.busy or cached.version != catalog.cache_version
                or schema_version != cached.version or catalog.dirty):
            return None
        self._plans.move_to_end(stmt.sql)
        return cached

    def add(self, stmt: ParsedStatement, catalog, schema_version: int, env: CompileEnv, plan: Operator
            ) -> Prepared:
        """Wrap a new plan; cache it unless its schema is private or stale, or the cached plan
        of the same text is still being read by an open result (e.g. another cursor: its
        context must keep its parameters, so this execution gets a private plan)."""
        version = catalog.cache_version
        prepared = Prepared(stmt, plan, env, version)
        cached = self._plans.get(stmt.sql)
        busy = cached is not None and cached.busy and cached.version == version
        if version == schema_version and not catalog.dirty and not busy:
            self._plans[stmt.sql] = prepared
            if len(self._plans) > self.size:
                self._plans.popitem(last=False)
        return prepared


def new_env(session: Any, catalog: Any, params: Any = ()) -> CompileEnv:
    """A compile environment over ``catalog`` for ``session`` (a `Session`): its context carries
    the session's sequence values and progress, its subqueries are planned by a QueryPlanner."""
    ctx = ExecContext(txn=catalog.txn, params=params, now=utc_now(), catalog=catalog,
                      extra={"sequences": session.sequence_values, "progress": session.progress})
    env = CompileEnv(ctx=ctx, functions=session.functions)
    env.subqueries = QueryPlanner(catalog, env)
    return env


def prepare(session: Any, stmt: ParsedStatement) -> Prepared:
    """The cached plan for ``stmt``'s text in ``session``'s current transaction, planned (and
    cached) when needed: `Session.prepare`, and `fast_read` for a text not planned yet."""
    catalog = session.state.catalog()
    version = session.db.schema_version
    prepared = session.plans.lookup(stmt, catalog, version)
    if prepared is None:
        env = new_env(session, catalog)
        prepared = session.plans.add(stmt, catalog, version, env, plan_statement(stmt, catalog, env))
    return prepared


def check_params(stmt: ParsedStatement, params: Any) -> None:
    """Refuse parameters that do not fit the statement's placeholders."""
    if params is None:
        params = ()
    if type(params) in (tuple, list):  # the common case, without the ABC checks below
        if len(params) != stmt.param_count:
            raise ProgrammingError(
                f"the statement uses {stmt.param_count} parameter(s), but {len(params)} were supplied"
            )
        return
    if isinstance(params, Mapping):
        if stmt.param_count:
            raise ProgrammingError("this statement uses positional parameters (?); pass a sequence")
        return
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise ProgrammingError(f"parameters must be a sequence or a mapping, not {type(params).__name__}")
    if len(params) != stmt.param_count:
        raise ProgrammingError(
            f"the statement uses {stmt.param_count} parameter(s), but {len(params)} were supplied"
        )
