"""The session time zone: what ``SET TIME ZONE`` sets and TIMESTAMPTZ values are read in.

A TIMESTAMPTZ value is an instant, stored as its naive UTC wall time (the key and value
codecs only know naive datetimes). The session zone matters at the two edges, as in
PostgreSQL: text without an offset given for a TIMESTAMPTZ (``INSERT ... VALUES ('2024-01-01
10:00')``, ``CAST('...' AS TIMESTAMPTZ)``, ``ts > '2024-01-01'``) is a wall time in that zone;
and a TIMESTAMPTZ column of a result is returned as an aware ``datetime`` in that zone.

``SET TIME ZONE 'Europe/Paris'`` then ``INSERT INTO t VALUES ('2024-01-01 10:00')`` stores
09:00 UTC; ``SELECT ts FROM t`` returns ``2024-01-01 10:00+01:00``. The zone in force while a
statement runs (and while its rows are pulled) is `current_zone()`, a context variable the
session sets; the default is UTC.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import re
import zoneinfo
from collections.abc import Iterable, Iterator
from typing import Any

from sqlkv.errors import DataError

UTC = dt.timezone.utc
_ZONE: contextvars.ContextVar[dt.tzinfo] = contextvars.ContextVar("sqlkv_time_zone", default=UTC)
_OFFSET = re.compile(r"^([+-])(\d{1,2})(?::?(\d{2}))?$")


def current_zone() -> dt.tzinfo:
    return _ZONE.get()


def set_zone(zone: dt.tzinfo) -> contextvars.Token:
    return _ZONE.set(zone)


def reset_zone(token: contextvars.Token) -> None:
    _ZONE.reset(token)


def zone_named(name: str) -> dt.tzinfo:
    """A zone from ``SET TIME ZONE``'s argument: an IANA name (``'America/New_York'``),
    ``UTC``/``Z``, or a fixed offset in hours (``-5``, ``'+05:30'``; ISO sign: east is +)."""
    text = name.strip()
    if text.upper() in ("UTC", "Z", "GMT", "ZULU", "UCT"):
        return UTC
    m = _OFFSET.match(text) or (re.fullmatch(r"\d{1,2}", text) and _OFFSET.match("+" + text))
    if m:
        hours, minutes = int(m.group(2)), int(m.group(3) or 0)
        if hours > 15 or minutes > 59:
            raise DataError(f'time zone offset out of range: "{name}"')
        delta = dt.timedelta(hours=hours, minutes=minutes)
        return dt.timezone(-delta if m.group(1) == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise DataError(f'invalid value for parameter "TimeZone": "{name}"') from None


def zone_name(zone: dt.tzinfo) -> str:
    """How SHOW TIME ZONE prints ``zone``."""
    if zone is UTC:
        return "UTC"
    if isinstance(zone, zoneinfo.ZoneInfo):
        return zone.key
    offset = zone.utcoffset(None) or dt.timedelta(0)
    sign = "-" if offset < dt.timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def local_to_utc(value: dt.datetime) -> dt.datetime:
    """A wall time in the session zone (naive) or an aware datetime, as naive UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=current_zone())
    return value.astimezone(UTC).replace(tzinfo=None)


def utc_to_session(value: object) -> object:
    """A stored TIMESTAMPTZ (naive UTC) as an aware datetime in the session zone."""
    if type(value) is not dt.datetime or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC).astimezone(current_zone())


def naive_params(params):
    """Parameters with each aware ``datetime`` as its naive UTC instant, the form every
    timestamp has inside sqlkv (a TIMESTAMPTZ fetched and passed back must find its row)."""
    values = params.values() if isinstance(params, dict) else params
    if dt.datetime not in map(type, values):  # the common case, checked at C speed
        return params
    if not any(type(v) is dt.datetime and v.tzinfo is not None for v in values):
        return params
    fix = _naive_utc
    if isinstance(params, dict):
        return {k: fix(v) for k, v in params.items()}
    return tuple(fix(v) for v in params)


def _naive_utc(v: object) -> object:
    if type(v) is dt.datetime and v.tzinfo is not None:
        return v.astimezone(UTC).replace(tzinfo=None)
    return v


def session_wall_time(value: object) -> object:
    """A stored TIMESTAMPTZ (naive UTC) as the naive wall time of the session zone: what
    extract, date_trunc, to_char and casts to DATE/TIME/TIMESTAMP see (PostgreSQL's rule)."""
    if type(value) is not dt.datetime or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC).astimezone(current_zone()).replace(tzinfo=None)


# functions that read a timestamp's calendar fields: a TIMESTAMPTZ argument is read as the
# session's wall time (date_trunc's result goes back to an instant: a TIMESTAMPTZ)
WALL_TIME_FUNCTIONS = frozenset({"date", "datetime", "strftime", "date_part", "datepart", "date_trunc",
                                 "to_char", "age", "time", "julianday"})


def rows_in_zone(rows: Iterable[tuple], columns: list[Any] | None, zone: dt.tzinfo) -> Iterable[tuple]:
    """Rows pulled in the session's time ``zone``, TIMESTAMPTZ columns as aware datetimes in it."""
    tz_cols = [i for i, c in enumerate(columns or []) if c.type is not None and c.type.tz]
    if not tz_cols and zone is UTC:
        return rows  # nothing to convert, and UTC is the zone when none is set
    return _zoned_rows(rows, zone, tz_cols)


_END = object()


def _zoned_rows(rows: Iterable[tuple], zone: dt.tzinfo, tz_cols: list[int]) -> Iterator[tuple]:
    """Each row computed with ``zone`` as the session zone (rows stream after execute returns)."""
    it = iter(rows)
    try:
        while True:
            token = set_zone(zone)
            try:
                row = next(it, _END)
                if row is _END:
                    return
                if tz_cols:
                    row = list(row)
                    for i in tz_cols:
                        row[i] = utc_to_session(row[i])
                    row = tuple(row)
            finally:
                reset_zone(token)
            yield row
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()  # a result closed early releases the plan's rows now
