"""Date/time nodes: INTERVAL literals, CURRENT_TIMESTAMP/CURRENT_DATE/now(), EXTRACT.

``now()`` and ``current_timestamp`` read ``ctx.now`` when the closure runs, so they are stable
within a statement and change between executions of a cached plan; they are never folded.
"""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.casts import cast, to_text
from sqlkv.sql.context import ExecContext
from sqlkv.sql.expr import dates
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled, constant
from sqlkv.sql.expr.operators import INTERVAL
from sqlkv.sql.types import DATE, SqlType, TEXT, TIMESTAMP
from sqlkv.sql.timezone import session_wall_time


@handles(exp.Interval)
def _interval(c: Compiler, node: exp.Interval) -> Compiled:
    unit = node.args.get("unit")
    unit_name = unit.name if unit is not None else None
    part = c.compile(node.this)
    if not part.const:
        fn = part.fn
        return Compiled(
            lambda r: None if (v := fn(r)) is None else dates.parse_interval(to_text(v), unit_name), INTERVAL
        )
    if part.value is None:
        return constant(None, INTERVAL)
    return constant(dates.parse_interval(to_text(part.value), unit_name), INTERVAL)


def statement_time(ctx: ExecContext) -> dt.datetime:
    now = ctx.now
    if now is None:  # outside a session (tests, eval_constant without a statement)
        now = ctx.now = utc_now()  # the clock, as the session reads it
    return now


def utc_now() -> dt.datetime:
    """The statement clock: UTC, naive (SQLite's CURRENT_TIMESTAMP; the instant a TIMESTAMPTZ
    stores), whatever the machine's local zone."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


@handles(exp.CurrentTimestamp, exp.CurrentDatetime)
def _current_timestamp(c: Compiler, node: exp.Expression) -> Compiled:
    ctx = c.env.ctx
    return Compiled(lambda r: statement_time(ctx), TIMESTAMP)


@handles(exp.CurrentDate)
def _current_date(c: Compiler, node: exp.Expression) -> Compiled:
    ctx = c.env.ctx
    return Compiled(lambda r: statement_time(ctx).date(), DATE)


@handles(exp.CurrentTime)
def _current_time(c: Compiler, node: exp.Expression) -> Compiled:
    ctx = c.env.ctx
    return Compiled(lambda r: statement_time(ctx).strftime("%H:%M:%S"), TEXT)


@handles(exp.Extract)
def _extract(c: Compiler, node: exp.Extract) -> Compiled:
    part_name = node.this.name
    part = c.compile(node.expression)
    if part.untyped_text:
        part = constant(cast(part.value, TIMESTAMP), TIMESTAMP)
    if part.type.known and part.type.kind not in ("DATE", "TIMESTAMP", "INTERVAL"):
        raise ProgrammingError(f"EXTRACT needs a DATE, TIMESTAMP or INTERVAL, not {part.type.sql()}")
    fn = part.fn
    if part.type.tz and dates.normalize_unit(part_name) != "EPOCH":  # fields of the session's wall time
        fn = lambda r, instant=fn: session_wall_time(instant(r))  # noqa: E731
    typ = SqlType("FLOAT") if dates.normalize_unit(part_name) in ("SECOND", "EPOCH") else SqlType("INT")
    dates.extract(part_name, dt.datetime(2000, 1, 1))  # reject unknown units now
    return c.derived(lambda r: None if (v := fn(r)) is None else dates.extract(part_name, v), typ, [part])
