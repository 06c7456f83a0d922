"""The session's fast path for a cached SELECT that is one equality read of an index.

``cursor.execute("SELECT name FROM users WHERE id = ?", (7,))`` for the second time: the plan
cache holds the plan, and `Prepared.read` (exec/fastpath.py) can compute its rows at once. This
runs it in the transaction the normal path (`Session._execute`) would use -- the open one, or a
read-only one of its own, committed before returning -- with the same statement figures and
the same PEP 249 errors, and hands back a `Result` whose rows are ready: no streaming result,
no callbacks, no savepoint (the statement writes nothing, so a failure has nothing to undo).
A SELECT text not planned yet is planned here, in that transaction (`plancache.prepare` caches
the plan: plancache.prepare), so its first execution takes this path too when the plan allows it.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.plancache import check_params, prepare
from sqlkv.sql.result import Result
from sqlkv.sql.stmtstats import figures_for, kv_counts, record
from sqlkv.sql.timezone import UTC, naive_params, rows_in_zone

if TYPE_CHECKING:
    from sqlkv.sql.session import Session


def fast_read(session: Session, stmt: ParsedStatement, params: Any) -> Result | None:
    """A cached SELECT that is one equality read of an index (exec/fastpath.py), run
    directly in the transaction `_execute` would use and handed back with its rows
    computed; None (nothing done) when the statement needs the normal path."""
    if stmt.kind != "SELECT" or stmt.as_of is not None:
        return None
    cached = session.plans.get(stmt.sql)  # a new text is planned below, in the read's transaction
    if cached is not None and (cached.read is None or cached.busy) or session.db.engine.shared:
        return None
    state = session.state
    own = state.owns_statement
    figures = figures_for(session, stmt)
    started = perf_counter_ns()
    txn = state.ensure(read_only=own)
    state.last_txn = txn
    base = kv_counts(txn)  # statement_stats: what this statement adds to the counts
    catalog = state.current_catalog
    if catalog is None or catalog.txn is not txn:
        catalog = state.catalog()
    prepared = session.plans.lookup(stmt, catalog, session.db.schema_version)
    rows = None
    if prepared is None and cached is None:
        try:
            prepared = prepare(session, stmt)
        except Exception as exc:  # noqa: BLE001 - becomes a PEP 249 error, as below
            raise _failed(session, stmt, txn, own, figures, base, started, exc)  # noqa: B904
    if prepared is not None and prepared.read is not None:
        try:
            if type(params) is not tuple or len(params) != stmt.param_count:
                check_params(stmt, params)  # raises, or passes a list or a mapping
            ctx = prepared.ctx
            ctx.txn = txn
            ctx.params = naive_params(params) if params else ()
            ctx.catalog = catalog
            ctx.stats = None
            ctx.cancelled = False
            session._current_ctx = ctx
            rows = prepared.read(ctx)
        except Exception as exc:  # noqa: BLE001 - becomes a PEP 249 error, as in _run_savepointed
            raise _failed(session, stmt, txn, own, figures, base, started, exc)  # noqa: B904
        finally:
            session._current_ctx = None
    if rows is None:  # the schema moved, or a long result that should stream
        if own:
            state.rollback()  # read-only and unused: the normal path begins its own
        return None
    if own:
        state.commit()
    columns = prepared.plan.columns  # type: ignore[union-attr]
    if prepared.zoned or session.time_zone is not UTC:  # type: ignore[union-attr]
        rows = list(rows_in_zone(rows, columns, session.time_zone))
    record(figures, txn, base, started, len(rows))
    return Result("SELECT", columns, ready=rows)


def _failed(session: Session, stmt: ParsedStatement, txn: Any, own: bool, figures: Any, base: tuple,
            started: int, exc: Exception) -> Exception:
    """The PEP 249 error for ``exc`` (undo_statement chains it), the statement's own transaction
    rolled back and the failure counted."""
    error = session.state.undo_statement(stmt, txn, None, exc)
    if own:
        session.state.rollback()
    record(figures, txn, base, started, 0, error)
    return error
