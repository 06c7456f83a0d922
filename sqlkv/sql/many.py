"""Session.executemany's parameter rows: binding each one, and the chunked INSERT path.

``executemany(sql, rows)`` plans once and binds the first row into the plan's context like an
``execute``; every later row only replaces the parameters (`bound_params`). A plain INSERT
(`sqlkv.sql.exec.insert_many.batchable`) takes the rows a chunk at a time instead
(`run_insert_many`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from itertools import chain, islice
from typing import Any

from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.insert_many import CHUNK_ROWS, execute_many
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.plancache import Prepared, check_params
from sqlkv.sql.result import Result
from sqlkv.sql.timezone import naive_params

_END = object()
Params = Any


def take(source: Iterator[Any], n: int) -> tuple[list[Any], Exception | None]:
    """Up to ``n`` items of ``source``, and the exception it raised instead of the next one, if
    it did (the caller raises it once the items before it have been used)."""
    items: list[Any] = []
    try:
        items.extend(islice(source, n))
    except Exception as exc:  # noqa: BLE001 - handed back, raised by the caller in order
        return items, exc
    return items, None


def bound_params(stmt: ParsedStatement, params: Any) -> Any:
    """One row of executemany's parameters, checked against the statement, as the plan reads it."""
    if type(params) is not tuple or len(params) != stmt.param_count:
        check_params(stmt, params)
    return () if params is None else naive_params(params)


def bound_chunks(stmt: ParsedStatement, source: Iterator[Any], size: int) -> Iterator[list[Params]]:
    """`bound_params` of every row, ``size`` rows a list; a row refused -- or an error of the
    source -- is raised after the list of the rows before it."""
    while True:
        raw, failure = take(source, size)
        if _plain_rows(stmt, raw):
            rows, refused = raw, None
        else:
            rows, refused = _bound_one_by_one(stmt, raw)
        if rows:
            yield rows
        if refused is not None or failure is not None:
            raise refused or failure  # type: ignore[misc]
        if len(raw) < size:
            return


def _plain_rows(stmt: ParsedStatement, raw: list[Any]) -> bool:
    """Whether every row is a tuple of the statement's width without a datetime (which
    `naive_params` would convert): `bound_params` would pass each unchanged."""
    if not raw or set(map(type, raw)) != {tuple} or set(map(len, raw)) != {stmt.param_count}:
        return False
    return datetime not in set(map(type, chain.from_iterable(raw)))


def _bound_one_by_one(stmt: ParsedStatement, raw: list[Any]) -> tuple[list[Params], Exception | None]:
    rows: list[Params] = []
    try:
        for params in raw:
            rows.append(bound_params(stmt, params))
    except Exception as exc:  # noqa: BLE001 - raised after the rows before it
        return rows, exc
    return rows, None


def run_insert_many(stmt: ParsedStatement, prepared: Prepared, seq_of_params: Iterable[Any],
                    bind_first: Callable[[Prepared, Any], ExecContext]) -> Result:
    """executemany of a batchable INSERT: ``bind_first`` binds the first row (the session's
    transaction, clock and catalog), the rest go through `execute_many`."""
    rows = iter(seq_of_params)
    first = next(rows, _END)
    if first is _END:
        return Result(stmt.kind, None, None, 0, None)
    ctx = bind_first(prepared, first)
    chunks = bound_chunks(prepared.stmt, chain([ctx.params], rows), CHUNK_ROWS)
    result = execute_many(prepared.plan, ctx, chunks)
    return Result(stmt.kind, None, None, result.rowcount, result.lastrowid)
