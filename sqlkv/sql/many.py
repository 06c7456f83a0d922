"""Session.executemany's parameter rows: binding each one, and the chunked INSERT path.

``executemany(sql, rows)`` plans once and binds the first row into the plan's context like an
``execute``; every later row only replaces the parameters (`bound_params`). A plain INSERT
(`sqlkv.sql.exec.insert_many.batchable`) takes the rows a chunk at a time instead
(`run_insert_many`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from itertools import chain
from typing import Any

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.insert_many import execute_many
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.plancache import Prepared, check_params
from sqlkv.sql.result import Result
from sqlkv.sql.timezone import naive_params

_END = object()


def bound_params(stmt: ParsedStatement, params: Any) -> Any:
    """One row of executemany's parameters, checked against the statement, as the plan reads it."""
    if type(params) is not tuple or len(params) != stmt.param_count:
        check_params(stmt, params)
    return () if params is None else naive_params(params)


def run_insert_many(stmt: ParsedStatement, prepared: Prepared, seq_of_params: Iterable[Any],
                    bind_first: Callable[[Prepared, Any], ExecContext]) -> Result:
    """executemany of a batchable INSERT: ``bind_first`` binds the first row (the session's
    transaction, clock and catalog), the rest go through `execute_many`."""
    rows = iter(seq_of_params)
    first = next(rows, _END)
    if first is _END:
        return Result(stmt.kind, None, None, 0, None)
    ctx = bind_first(prepared, first)
    result = execute_many(prepared.plan, ctx, chain([ctx.params], rows), partial(bound_params, prepared.stmt))
    return Result(stmt.kind, None, None, result.rowcount, result.lastrowid)
