"""``AS OF SYSTEM TIME``: the clause's parsing and the wall-clock time it names.

``SELECT * FROM t AS OF SYSTEM TIME '-5s' WHERE k = 1`` (CockroachDB's syntax; the clause
follows the FROM clause) reads ``t`` as it was five seconds ago. sqlglot has no node for the
clause, so `cut_as_of` finds it among the statement's tokens, cuts it from the text sqlglot
parses and keeps its expression (`parse_as_of_expr`). When the statement runs, the expression
is evaluated (parameters allowed) and `as_of_time` turns the value into Unix seconds:

- a negative INTERVAL, or text such as ``'-5s'``, ``'-1 minute'``, ``'-00:00:05'``,
  ``'-1h30m'`` (a leading minus negates the whole span): that long before now (the database
  clock);
- a TIMESTAMP/TIMESTAMPTZ, or text such as ``'2026-11-26 23:00:00'`` (no offset: local time,
  as ``now()`` gives it) or ``'2026-11-26T23:00:00+00:00'``;
- a number, or numeric text: nanoseconds since the Unix epoch (CockroachDB's decimal form).

The engine then resolves the time to a commit (sqlkv.storage.history) and the statement runs
in a read-only transaction at it, against the schema of that time.
"""

from __future__ import annotations

import datetime as dt
import decimal

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlkv.encoding.interval import Interval
from sqlkv.errors import DataError, NotSupportedError, SqlSyntaxError
from sqlkv.sql.expr.dates import parse_interval
from sqlkv.sql.parse_edits import token_word
from sqlkv.sql.parse_errors import sqlglot_parse

# words that end the clause's expression (the clause sits after FROM, before these)
_STOP_WORDS = frozenset({"WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "OFFSET", "FETCH",
                         "UNION", "INTERSECT", "EXCEPT", "FOR", "QUALIFY", "JOIN", "INNER", "LEFT",
                         "RIGHT", "FULL", "CROSS", "NATURAL"})
_CLAUSE = ["AS", "OF", "SYSTEM", "TIME"]


def find_as_of(toks: list[Token]) -> tuple[int, int] | None:
    """``(i, j)``: tokens ``i .. j-1`` are the clause, ``i+4 .. j-1`` its expression; None when
    the statement has none. Refuses a clause inside parentheses, a second one, or none given."""
    words = [token_word(t) for t in toks]
    found: tuple[int, int] | None = None
    depth = 0
    k = 0
    while k < len(toks):
        kind = toks[k].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
        elif words[k : k + 4] == _CLAUSE:
            if depth > 0:
                raise NotSupportedError("AS OF SYSTEM TIME must be given on the top-level statement, "
                                        "not inside a subquery")
            if found is not None:
                raise SqlSyntaxError("syntax error: AS OF SYSTEM TIME given twice")
            end = _expression_end(toks, words, k + 4)
            if end == k + 4:
                raise SqlSyntaxError("syntax error: AS OF SYSTEM TIME needs a timestamp or interval")
            found = (k, end)
            k = end
            continue
        k += 1
    return found


def _expression_end(toks: list[Token], words: list[str], start: int) -> int:
    depth = 0
    for k in range(start, len(toks)):
        kind = toks[k].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            if depth == 0:
                return k
            depth -= 1
        elif depth == 0 and (words[k].split(" ")[0] in _STOP_WORDS or kind == TokenType.COMMA):
            # (the tokenizer makes one token of "ORDER BY", "GROUP BY", "LEFT OUTER JOIN"...)
            return k
    return len(toks)


def parse_as_of_expr(text: str) -> exp.Expression:
    """The clause's expression (``?`` already renamed to the statement's ``:__pN``)."""
    try:
        tree = sqlglot_parse(f"SELECT {text}", text)
    except SqlSyntaxError as e:
        raise SqlSyntaxError(f"syntax error in AS OF SYSTEM TIME {text!r}: {e.args[0].lstrip(': ')}") from None
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1 or tree.args.get("from"):
        raise SqlSyntaxError(f"syntax error: AS OF SYSTEM TIME {text!r} is not one expression")
    return tree.expressions[0]


_EARLIEST = dt.datetime(1, 1, 2, tzinfo=dt.timezone.utc).timestamp()  # what datetime can show
_LATEST = dt.datetime(9999, 12, 30, tzinfo=dt.timezone.utc).timestamp()


def as_of_time(value: object, now: float) -> float:
    """The Unix time (seconds) an evaluated AS OF SYSTEM TIME value names; ``now`` is the
    database clock (for intervals)."""
    try:
        when = _time_of(value, now)
    except (ValueError, OverflowError, ArithmeticError):
        when = float("nan")
    if not _EARLIEST <= when <= _LATEST:  # also NaN
        raise DataError(f"AS OF SYSTEM TIME {value!r} is out of range")
    return when


def _time_of(value: object, now: float) -> float:
    if value is None:
        raise DataError("AS OF SYSTEM TIME: the timestamp is NULL")
    if isinstance(value, Interval):
        return _before_now(value, now)
    if isinstance(value, dt.datetime):
        return value.timestamp()  # a naive value is local time, as now() returns it
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).timestamp()
    if isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
        return float(decimal.Decimal(value) / 1_000_000_000)
    if isinstance(value, float):
        return value / 1e9
    if isinstance(value, str):
        return _text_time(value, now)
    raise DataError(f"AS OF SYSTEM TIME needs a timestamp, an interval or a number of nanoseconds, "
                    f"not {value!r}")


def _text_time(text: str, now: float) -> float:
    s = text.strip()
    try:
        return float(decimal.Decimal(s) / 1_000_000_000)  # 'nan' gives NaN: out of range
    except decimal.InvalidOperation:
        pass
    if s.startswith("-") or s.startswith("+"):
        body = s[1:]
        if s[0] == "-" and "-" not in body and "+" not in body:
            # '-1h30m', '-1 minute 5 seconds': the whole span ago (CockroachDB's reading), not
            # PostgreSQL's per-field signs, where only the first field would be negative
            iv = parse_interval(body)
            return _before_now(Interval(-iv.months, -iv.days, -iv.micros), now)
        return _before_now(parse_interval(s), now)
    try:
        stamp = dt.datetime.fromisoformat(s.replace(" UTC", "+00:00"))
    except ValueError:
        pass
    else:
        return stamp.timestamp()
    raise DataError(f"AS OF SYSTEM TIME: {text!r} is neither a timestamp (such as '2026-01-02 "
                    f"03:04:05'), a negative interval (such as '-5s') nor nanoseconds since the epoch")


def _before_now(iv: Interval, now: float) -> float:
    """``now + iv`` for a negative interval (months count 30 days, as in the interval order)."""
    micros = (iv.months * 30 + iv.days) * 86_400_000_000 + iv.micros
    if micros > 0:
        raise DataError(f"AS OF SYSTEM TIME: interval {iv} is positive; use a negative one such as "
                        f"'-5s' to read the past")
    return now + micros / 1_000_000
