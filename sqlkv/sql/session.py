"""Sessions: the API the DB-API driver, the CLI and the sqllogictest runner use.

``session.execute("UPDATE t SET v = ? WHERE id = ?", (5, 1))`` walks through:

1. `parse_statement` (cached per SQL text) -> a `ParsedStatement`;
2. the transaction: the open one (BEGIN, or autocommit off), else a fresh one that commits
   right after the statement (autocommit);
3. a savepoint, so a failing statement undoes only its own writes;
4. the plan: from the session's plan cache when the schema version is unchanged (plans keep
   their `ExecContext`; parameters, ``now`` and the transaction are set into it per run), else
   planned now -- SELECTs by the query planner (`plan_query`), DML by `sqlkv.sql.dml`; DDL is
   executed directly and bumps the schema version when its transaction commits;
5. a `Result` with the rows (lazy for SELECT), rowcount, lastrowid.

`Database.open` shares one engine per path within the process (reference counted).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sqlkv.catalog.catalog import Catalog, DescriptorCache
from sqlkv.errors import (
    ConditionFailedError,
    CorruptionError,
    DataError,
    Error,
    OperationalError,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    ProgrammingError,
)
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.depth import ensure_recursion_headroom, too_deep
from sqlkv.sql.dmlcommon import StatementResult
from sqlkv.sql.parse import ParsedStatement, parse_statement, split_statements
from sqlkv.sql.stmtstats import track_statement
from sqlkv.storage import open_engine
from sqlkv.txn import TxnManager

PLAN_CACHE_SIZE = 256
_TXN_CONTROL = {"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "ROLLBACK TO"}
_DDL_PREFIXES = ("CREATE ", "DROP ", "ALTER ")
_READ_KINDS = {"SELECT", "CHECK DATABASE"}


class Database:
    """One open database (an engine + transaction manager + descriptor cache)."""

    _registry: dict[str, Database] = {}
    _registry_lock = threading.Lock()

    def __init__(self, path: str, engine, key: str | None) -> None:
        self.path = path
        self.engine = engine
        self.txn_manager = TxnManager.for_engine(engine)
        self.descriptors = DescriptorCache()
        # a read-only database refuses writing statements when they run, not at COMMIT
        core = getattr(engine, "_core", engine)
        self.read_only = bool(getattr(core, "read_only", False))
        self._key = key
        self._refs = 1
        self.closed = False

    @property
    def schema_version(self) -> int:
        return self.descriptors.version

    @classmethod
    def open(cls, path: str = ":memory:", **options: Any) -> Database:
        """Open (or share) the database at ``path``; ``":memory:"`` is always a fresh one."""
        if path == ":memory:":
            return cls(path, open_engine(path, **options), None)
        key = os.path.realpath(path)
        with cls._registry_lock:
            db = cls._registry.get(key)
            if db is not None and not db.closed:
                db._refs += 1
                return db
            db = cls(path, open_engine(path, **options), key)
            cls._registry[key] = db
            return db

    def close(self) -> None:
        with self._registry_lock:
            if self.closed:
                return
            self._refs -= 1
            if self._refs > 0:
                return
            self.closed = True
            if self._key is not None and self._registry.get(self._key) is self:
                del self._registry[self._key]
        self.engine.close()

    def session(self, autocommit: bool = True) -> Session:
        return Session(self, autocommit)


class Result:
    """The outcome of one statement. Iterate it (lazily) for the rows of a SELECT/RETURNING."""

    def __init__(
        self,
        kind: str,
        columns: list[Column] | None = None,
        rows: Iterable[tuple] | None = None,
        rowcount: int = -1,
        lastrowid: int | None = None,
        on_done: Any = None,
        cleanup: Any = None,
    ) -> None:
        self.kind = kind
        self.columns = columns
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self._rows: Iterator[tuple] | None = iter(rows) if rows is not None else None
        self._on_done = on_done
        self._cleanup = cleanup  # releases the plan's context (runs even if never iterated)
        self.produced = 0  # rows handed out so far (statement_stats)

    def __iter__(self) -> Iterator[tuple]:
        if self._rows is None:
            return
        try:
            for row in self._rows:
                self.produced += 1
                yield row
        finally:
            self._finish()

    def fetchall(self) -> list[tuple]:
        return list(self)

    def _finish(self) -> None:
        self._rows = None
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()
        done, self._on_done = self._on_done, None
        if done is not None:
            done()

    def close(self) -> None:
        if self._rows is not None and hasattr(self._rows, "close"):
            try:
                self._rows.close()  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - closing a generator mid-way is best effort
                pass
        self._finish()

    def __repr__(self) -> str:
        return f"Result({self.kind}, rowcount={self.rowcount})"


class _Prepared:
    """A cached plan with its context."""

    def __init__(self, stmt: ParsedStatement, plan: Any, env: Any, version: int) -> None:
        self.stmt = stmt
        self.plan = plan
        self.env = env
        self.ctx: ExecContext = env.ctx
        self.version = version
        self.busy = False  # a lazy SELECT result still reads through this plan's context


class Session:
    """A connection-like handle: runs statements with autocommit/transaction semantics."""

    def __init__(self, db: Database, autocommit: bool = True) -> None:
        ensure_recursion_headroom()
        self.db = db
        self.autocommit = autocommit
        self._txn = None
        self._catalog: Catalog | None = None
        self._explicit = False  # BEGIN was executed
        self._savepoints: list[tuple[str, int]] = []
        self._plans: OrderedDict[str, _Prepared] = OrderedDict()
        self.functions: dict[str, Any] = {}  # user scalar functions (sqlkv.sql.expr.userfuncs)
        self._pending: Result | None = None
        self._autocommit_read = None  # the read txn of a pending autocommit SELECT
        self._current_ctx: ExecContext | None = None
        self._cancel = False
        self.last_txn = None  # the transaction the last statement ran in (statement_stats)
        self.closed = False
        self.lock = threading.RLock()

    # -- public API ------------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        """True inside BEGIN or an autocommit=False transaction (not for an autocommit SELECT
        whose read transaction only lives until its rows are consumed)."""
        if self._txn is None or not self._txn.active:
            return False
        return self._txn is not self._autocommit_read

    def execute(self, sql: str, params: Any = ()) -> Result:
        with self.lock:
            self._check_open()
            self._finish_pending()
            stmt = parse_statement(sql)
            return track_statement(self, stmt, lambda: self._execute(stmt, params))

    def executemany(self, sql: str, seq_of_params: Iterable[Any]) -> Result:
        """One parse, one plan, one transaction; rowcount summed."""
        with self.lock:
            self._check_open()
            self._finish_pending()
            stmt = parse_statement(sql)
            return track_statement(self, stmt, lambda: self._executemany(stmt, seq_of_params))

    def _executemany(self, stmt: ParsedStatement, seq_of_params: Iterable[Any]) -> Result:
        if stmt.kind == "SELECT" or stmt.kind in _TXN_CONTROL:
            raise ProgrammingError("executemany() is for DML statements")
        self._refuse_write(stmt)
        own = not self.in_transaction
        txn = self._ensure_txn(read_only=False)
        try:
            # the whole batch is one statement: one savepoint, all rows or none
            result = self._guard_statement(stmt, txn, lambda: self._run_many(stmt, seq_of_params))
            if own and self.autocommit and not self._explicit:
                self._commit_txn()
        except BaseException:
            if own and self.autocommit and not self._explicit:
                self._rollback_txn()
            raise
        return result

    def _run_many(self, stmt: ParsedStatement, seq_of_params: Iterable[Any]) -> Result:
        total = 0
        last = None
        dml = stmt.kind in ("INSERT", "UPDATE", "DELETE")
        prepared = self.prepare(stmt) if dml else None
        ctx = None
        execute = prepared.plan.execute if prepared is not None else None
        for params in seq_of_params:
            if prepared is not None:
                if ctx is None:
                    ctx = self._bind(prepared, params)  # txn, now, catalog: once per batch
                    self._current_ctx = ctx
                else:
                    if type(params) is not tuple or len(params) != prepared.stmt.param_count:
                        self._check_params(prepared.stmt, params)
                    ctx.params = () if params is None else params
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

    def execute_script(self, sql: str) -> Iterator[Result]:
        for piece in split_statements(sql):
            res = self.execute(piece.sql)
            yield res

    def commit(self) -> None:
        with self.lock:
            self._finish_pending()
            try:
                if self._txn is not None:
                    self._commit_txn()  # a failed COMMIT has rolled the transaction back
            finally:
                self._explicit = False

    def rollback(self) -> None:
        with self.lock:
            self._finish_pending()
            try:
                if self._txn is not None:
                    self._rollback_txn()
            finally:
                self._explicit = False

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.rollback()
        finally:
            self.closed = True

    def forget_plans(self) -> None:
        """Drop cached plans (a user function was defined or replaced)."""
        self._plans.clear()

    def cancel(self) -> None:
        """Ask the running statement to stop (it raises OperationalError). Thread-safe."""
        ctx = self._current_ctx
        if ctx is not None:
            ctx.cancelled = True

    # -- transactions ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise InterfaceError("session is closed")
        if self.db.closed:
            raise InterfaceError("database is closed")

    def _ensure_txn(self, read_only: bool):
        if self._txn is not None and self._txn.active:
            return self._txn
        self._txn = self.db.txn_manager.begin(read_only=read_only)
        self._catalog = None
        self._savepoints = []
        return self._txn

    def catalog(self) -> Catalog:
        """The catalog bound to the current transaction (opens one if needed)."""
        txn = self._ensure_txn(read_only=False)
        if self._catalog is None or self._catalog.txn is not txn:
            self._catalog = Catalog(txn, self.db.descriptors)
            from sqlkv.sql.virtual import virtual_table

            self._catalog.virtual = lambda name, cat=self._catalog: virtual_table(name, cat)
        return self._catalog

    def _commit_txn(self) -> None:
        txn, self._txn = self._txn, None
        self._catalog = None
        self._savepoints = []
        if txn is not None and txn.active:
            txn.commit()

    def _rollback_txn(self) -> None:
        txn, self._txn = self._txn, None
        self._catalog = None
        self._savepoints = []
        if txn is not None and txn.active:
            txn.rollback()

    def _finish_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.close()

    # -- execution -------------------------------------------------------------------------

    def _execute(self, stmt: ParsedStatement, params: Any) -> Result:
        kind = stmt.kind
        if kind in _TXN_CONTROL:
            return self._txn_control(stmt)
        self._refuse_write(stmt)
        implicit = not self.in_transaction and not self._explicit
        if implicit and self.autocommit:
            read_only = kind == "SELECT" or (kind == "EXPLAIN" and not stmt.explain_analyze)
            txn = self._ensure_txn(read_only=read_only)
            try:
                result = self._run_in_txn(stmt, params, txn)
            except BaseException:
                self._rollback_txn()
                raise
            if result.kind == "SELECT" and result._rows is not None:
                # keep the snapshot until the rows are consumed, then end the read
                result._on_done = self._autocommit_done(txn)
                self._pending = result
                self._autocommit_read = txn
                return result
            self._commit_txn()
            return result
        txn = self._ensure_txn(read_only=False)
        return self._run_in_txn(stmt, params, txn)

    def _refuse_write(self, stmt: ParsedStatement) -> None:
        if not self.db.read_only:
            return
        if stmt.kind == "EXPLAIN" and stmt.inner is not None:
            if not stmt.explain_analyze:
                return
            stmt = stmt.inner
        if stmt.kind not in _READ_KINDS:
            raise OperationalError(f"database is read-only: cannot run {stmt.kind} on {self.db.path}")

    def _autocommit_done(self, txn):
        def done() -> None:
            if self._autocommit_read is txn:
                self._autocommit_read = None
            if self._txn is txn:
                self._commit_txn()

        return done

    def _run_in_txn(self, stmt: ParsedStatement, params: Any, txn) -> Result:
        return self._guard_statement(stmt, txn, lambda: self._run(stmt, params))

    def _guard_statement(self, stmt: ParsedStatement, txn, run) -> Result:
        """Run under a savepoint: a failure undoes exactly this statement's writes."""
        self.last_txn = txn  # for statement_stats (stmtstats.track_statement)
        token = txn.savepoint()
        try:
            result = run()
        except ConditionFailedError as e:
            txn.rollback_to(token)
            txn.release(token)
            raise IntegrityError(f"duplicate key value violates a unique constraint ({e})") from None
        except Error:
            txn.rollback_to(token)
            txn.release(token)
            raise
        except Exception as e:  # noqa: BLE001 - turned into a PEP 249 error naming the statement
            if txn.active:
                txn.rollback_to(token)
                txn.release(token)
            raise _as_pep249(e, stmt.sql, f"in {stmt.sql[:200]!r}") from e
        txn.release(token)
        return result

    def _run(self, stmt: ParsedStatement, params: Any) -> Result:
        kind = stmt.kind
        if kind == "CHECK DATABASE":
            from sqlkv.sql.check import check_catalog

            problems = [f"storage: {p}" for p in self.db.engine.verify()]
            try:
                problems += check_catalog(self.catalog(), self._new_ctx(params))
            except CorruptionError as exc:  # already named by the storage half, if it is a file
                problems.append(f"data unreadable: {exc}")
            cols = [Column("problem")]
            return Result(kind, cols, [(p,) for p in problems], len(problems))
        if kind == "EXPLAIN":
            from sqlkv.sql.explain import explain_statement

            return explain_statement(self, stmt, params)
        if kind.startswith(_DDL_PREFIXES):
            return self._run_ddl(stmt, params)
        prepared = self.prepare(stmt)
        ctx = self._bind(prepared, params)
        return self._execute_plan(prepared, ctx)

    def _run_ddl(self, stmt: ParsedStatement, params: Any) -> Result:
        from sqlkv.sql.ddl import execute_ddl

        self._check_params(stmt, params)
        catalog = self.catalog()
        env = self._new_env(catalog, params)
        self._current_ctx = env.ctx
        try:
            execute_ddl(stmt, catalog, env)
        finally:
            self._current_ctx = None
        return Result(stmt.kind, None, None, -1)

    def _new_ctx(self, params: Any) -> ExecContext:
        return ExecContext(
            txn=self._txn, params=params, now=_dt.datetime.now(), catalog=self._catalog
        )

    def _new_env(self, catalog: Catalog, params: Any = ()):
        from sqlkv.sql.expr import CompileEnv

        ctx = ExecContext(txn=catalog.txn, params=params, now=_dt.datetime.now(), catalog=catalog)
        env = CompileEnv(ctx=ctx, functions=self.functions)
        try:
            from sqlkv.sql.plan.select import QueryPlanner

            env.subqueries = QueryPlanner(catalog, env)
        except ImportError:
            pass
        return env

    def prepare(self, stmt: ParsedStatement) -> _Prepared:
        """The cached plan for this statement text, planning it when needed."""
        catalog = self.catalog()
        # The version the catalog's snapshot reflects: a transaction that began before a DDL
        # committed still reads the old descriptors, so its plans must not pass for new ones.
        version = catalog.cache_version
        cached = self._plans.get(stmt.sql)
        if cached is not None and cached.version == version == self.db.schema_version and not catalog.dirty:
            if not cached.busy:
                self._plans.move_to_end(stmt.sql)
                return cached
            # the same text is still being read by an open result (e.g. another cursor): its
            # context must keep its parameters, so this execution gets a private plan
            env = self._new_env(catalog)
            return _Prepared(stmt, self._plan(stmt, catalog, env), env, version)
        env = self._new_env(catalog)
        plan = self._plan(stmt, catalog, env)
        prepared = _Prepared(stmt, plan, env, version)
        if not catalog.dirty and version == self.db.schema_version:
            self._plans[stmt.sql] = prepared
            if len(self._plans) > PLAN_CACHE_SIZE:
                self._plans.popitem(last=False)
        return prepared

    def _plan(self, stmt: ParsedStatement, catalog: Catalog, env) -> Any:
        from sqlkv.sql import dml

        ast = stmt.ast.copy()
        kind = stmt.kind
        if kind == "SELECT":
            from sqlkv.sql.plan.select import plan_query

            return _SelectPlan(plan_query(ast, catalog, env))
        if kind == "INSERT":
            return dml.InsertPlan(ast, catalog, env, upsert=stmt.upsert)
        if kind == "UPDATE":
            return dml.UpdatePlan(ast, catalog, env)
        if kind == "DELETE":
            return dml.DeletePlan(ast, catalog, env)
        if kind == "TRUNCATE":
            return dml.TruncatePlan(ast, catalog, env)
        raise NotSupportedError(f"unsupported statement: {kind}")

    def _check_params(self, stmt: ParsedStatement, params: Any) -> None:
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

    def _bind(self, prepared: _Prepared, params: Any) -> ExecContext:
        self._check_params(prepared.stmt, params)
        ctx = prepared.ctx
        ctx.txn = self._txn
        ctx.params = () if params is None else params
        ctx.now = _dt.datetime.now()
        ctx.catalog = self._catalog
        ctx.stats = None
        ctx.cancelled = False
        return ctx

    def _execute_plan(self, prepared: _Prepared, ctx: ExecContext) -> Result:
        plan = prepared.plan
        kind = prepared.stmt.kind
        self._current_ctx = ctx
        try:
            if isinstance(plan, _SelectPlan):
                prepared.busy = True
                return Result(
                    "SELECT",
                    plan.columns,
                    self._guarded(plan.rows(ctx), ctx, prepared),
                    -1,
                    cleanup=lambda: setattr(prepared, "busy", False),
                )
            res: StatementResult = plan.execute(ctx)
        finally:
            if not isinstance(plan, _SelectPlan):
                self._current_ctx = None
        kind_name = "UPSERT" if prepared.stmt.upsert else kind
        return Result(kind_name, plan.columns, res.rows, res.rowcount, res.lastrowid)

    def _guarded(self, rows: Iterator[tuple], ctx: ExecContext, prepared: _Prepared) -> Iterator[tuple]:
        """Rows of a SELECT with unexpected exceptions turned into PEP 249 errors."""
        try:
            yield from rows
        except Error:
            raise
        except ConditionFailedError as e:
            raise IntegrityError(str(e)) from None
        except Exception as e:  # noqa: BLE001
            raise _as_pep249(e, prepared.stmt.sql, "while reading rows") from e
        finally:
            prepared.busy = False
            if self._current_ctx is ctx:
                self._current_ctx = None

    # -- transaction control statements ----------------------------------------------------

    def _txn_control(self, stmt: ParsedStatement) -> Result:
        kind = stmt.kind
        if kind == "BEGIN":
            if self._explicit:
                raise ProgrammingError("there is already a transaction in progress")
            self._ensure_txn(read_only=False)
            self._explicit = True
        elif kind == "COMMIT":
            self.commit()
        elif kind == "ROLLBACK":
            self.rollback()
        elif kind == "SAVEPOINT":
            txn = self._ensure_txn(read_only=False)
            if not self._explicit and self.autocommit:
                self._explicit = True  # SAVEPOINT outside BEGIN starts a transaction (like SQLite)
            self._savepoints.append((stmt.savepoint or "", txn.savepoint()))
        elif kind in ("RELEASE", "ROLLBACK TO"):
            i = self._find_savepoint(stmt.savepoint or "")
            name, token = self._savepoints[i]
            if kind == "RELEASE":
                self._txn.release(token)
                del self._savepoints[i:]
            else:
                self._txn.rollback_to(token)
                del self._savepoints[i + 1 :]
        return Result(kind, None, None, -1)

    def _find_savepoint(self, name: str) -> int:
        if self._txn is None or not self._txn.active:
            raise ProgrammingError(f'savepoint "{name}" does not exist (no transaction in progress)')
        for i in range(len(self._savepoints) - 1, -1, -1):
            if self._savepoints[i][0].lower() == name.lower():
                return i
        raise ProgrammingError(f'savepoint "{name}" does not exist')


class _SelectPlan:
    """A query operator as a plan."""

    def __init__(self, op) -> None:
        self.op = op
        self.columns = op.columns

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        return self.op.rows(ctx)

    def explain_root(self):
        return self.op


def _as_pep249(e: Exception, sql: str, where: str) -> Error:
    """The PEP 249 error for a Python exception a statement raised. Too-deep input and values
    out of Python's ranges are the user's (ProgrammingError, DataError); anything else is a
    bug in sqlkv, reported as InternalError naming the statement."""
    if isinstance(e, RecursionError):
        return too_deep(sql)
    if isinstance(e, OverflowError):
        return DataError(f"value out of range: {e}")
    if isinstance(e, decimal.DecimalException):
        return DataError(f"invalid numeric value or operation ({type(e).__name__})")
    return InternalError(f"internal error {where}: {type(e).__name__}: {e}")
