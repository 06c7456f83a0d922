"""Sessions: the statement loop the DB-API driver, the CLI and the sqllogictest runner use.

``session.execute("UPDATE t SET v = ? WHERE id = ?", (5, 1))`` walks through:

1. `parse_statement` (cached per SQL text) -> a `ParsedStatement`;
2. the transaction (`TxnState`): the open one (BEGIN, or autocommit off), else a fresh one that
   commits right after the statement (autocommit); in an open transaction the statement runs
   under a savepoint, so a failing statement undoes only its own writes (a fresh transaction
   is rolled back whole);
3. the plan, from the session's `PlanCache` (plans keep their `ExecContext`; parameters,
   ``now`` and the transaction are bound into it per run), else `plan_statement`; DDL is
   executed directly (`execute_ddl`) and bumps the schema version when its transaction commits;
4. execution: a write operator's `execute`, or a SELECT's rows pulled lazily by the caller;
5. a `Result` with the rows, rowcount, lastrowid.

`Database` (database.py) is the open database the sessions share.
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sqlkv.catalog.catalog import Catalog
from sqlkv.errors import (
    ConditionFailedError,
    Error,
    IntegrityError,
    InterfaceError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
)
from sqlkv.sql.analyze import analyze_statement
from sqlkv.sql.asof import as_of_time
from sqlkv.sql.check import database_problems
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.database import Database
from sqlkv.sql.ddl import execute_ddl
from sqlkv.sql.depth import ensure_recursion_headroom
from sqlkv.sql.exec.write import WriteOperator, WriteResult
from sqlkv.sql.explain import explain
from sqlkv.sql.fastread import fast_read
from sqlkv.sql.many import bound_params, run_insert_many
from sqlkv.sql.exec.insert_many import batchable
from sqlkv.sql.expr import CompileEnv, eval_constant
from sqlkv.sql.parse import ParsedStatement, parse_statement, split_statements
from sqlkv.sql.pep249 import as_pep249
from sqlkv.sql.plan.statement import PLANNED_KINDS
from sqlkv.sql.plancache import PlanCache, Prepared, check_params, new_env
from sqlkv.sql.plancache import prepare as prepare_plan
from sqlkv.sql.result import Result
from sqlkv.sql.stmtstats import StatementTracker
from sqlkv.sql.expr.temporal import utc_now
from sqlkv.sql.timezone import UTC, naive_params, reset_zone, rows_in_zone, set_zone, zone_name, zone_named
from sqlkv.sql.txnstate import TXN_CONTROL, TxnState
from sqlkv.sql.types import TEXT

_DDL_PREFIXES = ("CREATE ", "DROP ", "ALTER ")
_DML_KINDS = {"INSERT", "UPDATE", "DELETE"}


class Session:
    """A connection-like handle: runs statements with autocommit/transaction semantics."""

    def __init__(self, db: Database, autocommit: bool = True) -> None:
        ensure_recursion_headroom()
        self.db = db
        self.state = TxnState(db, autocommit)
        self.plans = PlanCache()
        self.sequence_values: dict = {}  # what nextval returned in this session (currval/lastval)
        self.functions: dict[str, Any] = {}  # user scalar functions (sqlkv.sql.expr.userfuncs)
        self.time_zone: _dt.tzinfo = UTC  # SET TIME ZONE (sqlkv/sql/timezone.py)
        self._pending: Result | None = None
        self._current_ctx: ExecContext | None = None
        self._owns_txn = False  # the running statement has its transaction to itself
        # progress(title) -> context manager yielding wrap(rows, total=, label=): the shell's
        # bars for long loops (CREATE INDEX backfill, CHECK DATABASE); None draws nothing
        self.progress: Any = None
        self.closed = False
        self.lock = threading.RLock()

    # -- public API ------------------------------------------------------------------------

    @property
    def autocommit(self) -> bool:
        return self.state.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        self.state.autocommit = value

    @property
    def in_transaction(self) -> bool:
        """True inside BEGIN or an autocommit=False transaction (not for an autocommit SELECT
        whose read transaction only lives until its rows are consumed)."""
        return self.state.in_transaction

    @property
    def txn(self):
        """The current transaction, if any (None when idle)."""
        return self.state.txn

    def catalog(self) -> Catalog:
        """The catalog bound to the current transaction (opens one if needed)."""
        return self.state.catalog()

    def execute(self, sql: str, params: Any = ()) -> Result:
        with self.lock:
            if self.closed or self.db.closed or self._pending is not None:  # else nothing to do
                self._check_open()
                self._finish_pending()
            stmt = parse_statement(sql)
            token = set_zone(self.time_zone)
            try:
                return fast_read(self, stmt, params) or self._tracked(stmt, self._execute, params)
            finally:
                reset_zone(token)

    def executemany(self, sql: str, seq_of_params: Iterable[Any]) -> Result:
        """One parse, one plan, one transaction; rowcount summed."""
        with self.lock:
            self._check_open()
            self._finish_pending()
            stmt = parse_statement(sql)
            token = set_zone(self.time_zone)
            try:
                return self._tracked(stmt, self._executemany, seq_of_params)
            finally:
                reset_zone(token)

    def execute_script(self, sql: str) -> Iterator[Result]:
        for piece in split_statements(sql):
            yield self.execute(piece.sql)

    def commit(self) -> None:
        with self.lock:
            self._finish_pending()
            try:
                self.state.commit()
            finally:
                self.state.explicit = False

    def rollback(self) -> None:
        with self.lock:
            self._finish_pending()
            try:
                self.state.rollback()
            finally:
                self.state.explicit = False

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.rollback()
        finally:
            self.closed = True

    def close_with_database(self, on_rollback: Callable[[], None] | None = None) -> None:
        """Close the session and give back its share of the database (shared and reference
        counted per path); an open transaction is rolled back, ``on_rollback()`` called first."""
        try:
            if self.in_transaction:
                if on_rollback is not None:
                    on_rollback()
                self.rollback()
        finally:
            try:
                self.close()
            finally:
                self.db.close()

    def forget_plans(self) -> None:
        """Drop cached plans (a user function was defined or replaced)."""
        self.plans.clear()

    def cancel(self) -> None:
        """Ask the running statement to stop (it raises OperationalError). Thread-safe."""
        ctx = self._current_ctx
        if ctx is not None:
            ctx.cancelled = True

    # -- the statement loop ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise InterfaceError("session is closed")
        if self.db.closed:
            raise InterfaceError("database is closed")

    def _tracked(self, stmt: ParsedStatement, run: Callable[[ParsedStatement, Any], Result], arg: Any) -> Result:
        """``run(stmt, arg)`` with its figures added to ``sqlkv_internal.statement_stats``."""
        tracker = StatementTracker(self, stmt)
        try:
            result = run(stmt, arg)
        except BaseException as exc:
            tracker.failed(exc)
            raise
        return tracker.finished(result)

    def _finish_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.close()

    def _execute(self, stmt: ParsedStatement, params: Any) -> Result:
        kind = stmt.kind
        state = self.state
        as_of = stmt.inner.as_of if kind == "EXPLAIN" and stmt.inner is not None else stmt.as_of
        if kind == "BEGIN" and as_of is not None:
            state.use_past(self._begin_as_of(as_of, stmt, params), explicit=True)
            return Result(kind, None, None, -1)
        if kind in TXN_CONTROL:
            state.control(stmt, self.commit, self.rollback)
            return Result(kind, None, None, -1)
        if kind == "SET TIME ZONE":
            self.time_zone = UTC if stmt.zone is None else zone_named(stmt.zone)
            self.plans.clear()  # plans fold zone-dependent constants ('2024-01-01' for a TIMESTAMPTZ)
            return Result(kind, None, None, -1)
        if kind == "SHOW TIME ZONE":
            return Result("SELECT", [Column("timezone", None, TEXT)], [(zone_name(self.time_zone),)], -1)
        self._refuse_write(stmt)
        if as_of is not None:  # one read of the past, in a transaction of its own
            txn = self._begin_as_of(as_of, stmt, params)
            state.use_past(txn, explicit=False)
        elif not state.owns_statement:
            txn = state.ensure(read_only=False)
            self._refuse_write_in_past(txn, stmt)
            return self._run_savepointed(stmt, txn, params)
        else:
            read_only = kind == "SELECT" or (kind == "EXPLAIN" and not stmt.explain_analyze)
            txn = state.ensure(read_only=read_only)
        try:
            # no savepoint: the transaction is the statement's own, rolled back whole if it fails
            result = self._run_savepointed(stmt, txn, params, savepoint=False)
        except BaseException:
            state.rollback()
            raise
        if result.kind == "SELECT" and result.streaming:
            # keep the snapshot until the rows are consumed, then end the read
            result.when_done(state.end_read_when_done(txn))
            self._pending = result
            return result
        state.commit()
        return result

    def _refuse_write(self, stmt: ParsedStatement) -> None:
        if self.db.read_only and stmt.writes:
            kind = stmt.inner.kind if stmt.kind == "EXPLAIN" and stmt.inner is not None else stmt.kind
            raise OperationalError(f"database is read-only: cannot run {kind} on {self.db.path}")

    def _begin_as_of(self, node, stmt: ParsedStatement, params: Any):
        """A read-only transaction at the time ``node`` (the AS OF SYSTEM TIME expression) names."""
        check_params(stmt, params)
        env = CompileEnv(ctx=ExecContext(txn=None, params=() if params is None else params,
                                         now=utc_now(), catalog=None,
                                         extra={"sequences": self.sequence_values}),
                         functions=self.functions)
        history = getattr(self.db.engine, "history", None)
        now = history.clock() if history is not None else time.time()
        return self.db.txn_manager.begin_as_of(as_of_time(eval_constant(node, env), now))

    def _refuse_write_in_past(self, txn, stmt: ParsedStatement) -> None:
        """Inside BEGIN AS OF SYSTEM TIME only reads run (a clear error before any work)."""
        if txn.as_of is not None and stmt.writes:
            raise ProgrammingError(f"cannot run {stmt.kind} in a transaction AS OF SYSTEM TIME: it "
                                   f"reads the past and is read-only")

    def _executemany(self, stmt: ParsedStatement, seq_of_params: Iterable[Any]) -> Result:
        if stmt.kind == "SELECT" or stmt.kind in TXN_CONTROL:
            raise ProgrammingError("executemany() is for DML statements")
        self._refuse_write(stmt)
        own = self.state.owns_statement
        txn = self.state.ensure(read_only=False)
        self._refuse_write_in_past(txn, stmt)
        try:
            # the whole batch is one statement: one savepoint (or its own transaction), all rows or none
            result = self._run_savepointed(stmt, txn, seq_of_params, many=True, savepoint=not own)
            if own:
                self.state.commit()
        except BaseException:
            if own:
                self.state.rollback()
            raise
        return result

    def _run_savepointed(self, stmt: ParsedStatement, txn, params: Any, many: bool = False,
                         savepoint: bool = True) -> Result:
        """Run under a savepoint: a failure undoes exactly this statement's writes and reaches
        the caller as a PEP 249 error (`TxnState.undo_statement`). A statement running in a
        transaction of its own (``savepoint=False``) needs none: its caller rolls that back."""
        state = self.state
        self._owns_txn = not savepoint and not many  # the statement's own autocommit transaction
        token = state.begin_statement(txn, savepoint)
        try:
            result = self._run_many(stmt, params) if many else self._run(stmt, params)
        except Exception as exc:  # noqa: BLE001 - becomes a PEP 249 error naming the statement
            raise state.undo_statement(stmt, txn, token, exc)  # noqa: B904 - undo_statement chains it
        state.end_statement(txn, token)
        return result

    def _run(self, stmt: ParsedStatement, params: Any) -> Result:
        kind = stmt.kind
        if kind == "CHECK DATABASE":
            return self._check_database(params)
        if kind == "ANALYZE":
            return analyze_statement(self.catalog(), stmt, self._new_ctx(params))
        if kind == "EXPLAIN":
            return self._explain(stmt, params)
        if kind.startswith(_DDL_PREFIXES):
            return self._run_ddl(stmt, params)
        prepared = self.prepare(stmt)
        ctx = self._bind(prepared, params)
        return self._execute_plan(prepared, ctx)

    def _run_many(self, stmt: ParsedStatement, seq_of_params: Iterable[Any]) -> Result:
        total = 0
        last = None
        prepared = self.prepare(stmt) if stmt.kind in _DML_KINDS else None
        if prepared is not None and batchable(prepared.plan):
            return run_insert_many(stmt, prepared, seq_of_params, self._bind)
        ctx = None
        execute = prepared.plan.execute if prepared is not None else None
        for params in seq_of_params:
            if prepared is not None:
                if ctx is None:
                    ctx = self._bind(prepared, params)  # txn, now, catalog: once per batch
                else:
                    ctx.params = bound_params(prepared.stmt, params)
                    ctx.check_cancelled()
                res = execute(ctx)
            else:
                res = self._run(stmt, params)
            if res.rowcount > 0:
                total += res.rowcount
            if res.lastrowid is not None:
                last = res.lastrowid
        self._current_ctx = None
        return Result("UPSERT" if stmt.upsert else stmt.kind, None, None, total, last)

    def _check_database(self, params: Any) -> Result:
        problems = database_problems(self.db.engine, self.catalog, lambda: self._new_ctx(params))
        return Result("CHECK DATABASE", [Column("problem")], [(p,) for p in problems], len(problems))

    def _explain(self, stmt: ParsedStatement, params: Any) -> Result:
        inner = stmt.inner
        if inner is None or inner.kind not in PLANNED_KINDS:
            raise NotSupportedError(f"EXPLAIN is not supported for {inner.kind if inner else 'this statement'}")
        prepared = self.prepare(inner)
        ctx = self._bind(prepared, params)
        lines = explain(prepared.plan, ctx, analyze=stmt.explain_analyze)
        return Result("EXPLAIN", [Column("info")], [(line,) for line in lines], -1)

    def _run_ddl(self, stmt: ParsedStatement, params: Any) -> Result:
        check_params(stmt, params)
        catalog = self.catalog()
        env = self._new_env(catalog, params)
        env.ctx.extra["owns_txn"] = self._owns_txn  # CREATE INDEX may then commit steps of its own
        self._current_ctx = env.ctx
        try:
            execute_ddl(stmt, catalog, env)
        finally:
            self._current_ctx = None
        return Result(stmt.kind, None, None, -1)

    # -- plans -----------------------------------------------------------------------------

    def _new_ctx(self, params: Any) -> ExecContext:
        return ExecContext(
            txn=self.state.txn, params=params, now=utc_now(), catalog=self.state.current_catalog,
            extra={"sequences": self.sequence_values, "progress": self.progress},
        )

    def _new_env(self, catalog: Catalog, params: Any = ()) -> CompileEnv:
        return new_env(self, catalog, params)

    def prepare(self, stmt: ParsedStatement) -> Prepared:
        """The cached plan for this statement text, planning it when needed (plancache.prepare)."""
        return prepare_plan(self, stmt)

    def _bind(self, prepared: Prepared, params: Any) -> ExecContext:
        check_params(prepared.stmt, params)
        ctx = prepared.ctx
        ctx.txn = self.state.txn
        ctx.params = () if params is None else naive_params(params)
        ctx.now = utc_now()
        ctx.catalog = self.state.current_catalog
        ctx.stats = None
        ctx.cancelled = False
        ctx.extra["sequences"] = self.sequence_values
        self._current_ctx = ctx  # what cancel() flags
        return ctx

    def _execute_plan(self, prepared: Prepared, ctx: ExecContext) -> Result:
        plan = prepared.plan
        self._current_ctx = ctx
        if not isinstance(plan, WriteOperator):
            prepared.busy = True
            rows = self._guarded(plan.rows(ctx), ctx, prepared)
            rows = rows_in_zone(rows, plan.columns, self.time_zone)
            if prepared.eager:
                rows = list(rows)  # nextval/setval act when the statement runs, fetched or not
            return Result(
                "SELECT",
                plan.columns,
                rows,
                -1,
                cleanup=lambda: setattr(prepared, "busy", False),
            )
        try:
            res: WriteResult = plan.execute(ctx)
        finally:
            self._current_ctx = None
        kind_name = "UPSERT" if prepared.stmt.upsert else prepared.stmt.kind
        rows = rows_in_zone(res.rows, plan.columns, self.time_zone) if res.rows is not None else None
        return Result(kind_name, plan.columns, rows, res.rowcount, res.lastrowid)

    def _guarded(self, rows: Iterator[tuple], ctx: ExecContext, prepared: Prepared) -> Iterator[tuple]:
        """Rows of a SELECT with unexpected exceptions turned into PEP 249 errors."""
        try:
            yield from rows
        except Error:
            raise
        except ConditionFailedError as e:
            raise IntegrityError(str(e)) from None
        except Exception as e:  # noqa: BLE001
            raise as_pep249(e, prepared.stmt.sql, "while reading rows") from e
        finally:
            prepared.busy = False
            if self._current_ctx is ctx:
                self._current_ctx = None

