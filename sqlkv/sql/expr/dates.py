"""Dates and times in expressions: INTERVAL values, date arithmetic, EXTRACT, strftime.

``created + INTERVAL '1 month'`` compiles the literal through `parse_interval` into
``Interval(months=1)``; adding it to a timestamp goes through `add_interval`, which moves the
month first (clamping Jan 31 + 1 month to Feb 28/29, as PostgreSQL does) and then the days and
microseconds. The `Interval` value type itself lives in `sqlkv.encoding.interval` (INTERVAL
columns store it, so the key and value codecs below the SQL layer know it).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from decimal import Decimal

from sqlkv.encoding.interval import DAY_MICROS, Interval
from sqlkv.errors import DataError, ProgrammingError

__all__ = ["Interval"]


_UNIT_MICROS = {
    "MICROSECOND": 1, "MILLISECOND": 1000, "SECOND": 1_000_000, "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
}
_UNIT_ALIASES = {
    "US": "MICROSECOND", "MS": "MILLISECOND", "S": "SECOND", "SEC": "SECOND", "SECS": "SECOND",
    "M": "MINUTE", "MIN": "MINUTE", "MINS": "MINUTE", "H": "HOUR", "HR": "HOUR", "HRS": "HOUR",
    "D": "DAY", "W": "WEEK", "MON": "MONTH", "MONS": "MONTH", "Y": "YEAR", "YR": "YEAR",
    "YRS": "YEAR",
}


def normalize_unit(unit: str) -> str:
    u = unit.upper()
    u = _UNIT_ALIASES.get(u, u)
    if u.endswith("S") and u[:-1] in ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR",
                                      "DAY", "WEEK", "MONTH", "YEAR", "DECADE", "CENTURY"):
        u = u[:-1]
    return _UNIT_ALIASES.get(u, u)


def interval_of(amount: float, unit: str) -> Interval:
    u = normalize_unit(unit)
    if u in ("YEAR", "MONTH", "DECADE", "CENTURY"):
        months = {"YEAR": 12, "MONTH": 1, "DECADE": 120, "CENTURY": 1200}[u] * amount
        if months != int(months):
            raise DataError(f"fractional {unit.lower()} in interval is not supported")
        return Interval(months=int(months))
    if u in ("DAY", "WEEK"):
        days = amount * (7 if u == "WEEK" else 1)
        whole = int(days)
        return Interval(days=whole, micros=round((days - whole) * 86_400_000_000))
    if u in _UNIT_MICROS:
        return Interval(micros=round(amount * _UNIT_MICROS[u]))
    raise ProgrammingError(f'interval unit "{unit}" not recognized')


_PART = re.compile(r"\s*([-+]?\d+(?:\.\d*)?)\s*([A-Za-z]+)\s*")
_CLOCK = re.compile(r"\s*([-+])?(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d+)?))?\s*$")


def parse_interval(text: str, unit: str | None = None) -> Interval:
    """``'1 day 2 hours'``, ``'01:30:00'``, or a number with ``unit`` (INTERVAL '3' DAY)."""
    s = text.strip()
    if unit:
        try:
            return interval_of(float(s), unit)
        except ValueError:
            pass
    total = Interval()
    pos = 0
    while pos < len(s):
        clock = _CLOCK.match(s, pos)
        if clock:
            sign = -1 if clock.group(1) == "-" else 1
            secs = float(clock.group(4) or 0)
            micros = (int(clock.group(2)) * 3600 + int(clock.group(3)) * 60) * 1_000_000
            total = total.plus(Interval(micros=sign * (micros + round(secs * 1_000_000))))
            pos = len(s)
            break
        m = _PART.match(s, pos)
        if not m or m.end() == pos:
            raise DataError(f'invalid input syntax for type INTERVAL: "{text}"')
        total = total.plus(interval_of(float(m.group(1)), m.group(2)))
        pos = m.end()
    if pos == 0:
        raise DataError(f'invalid input syntax for type INTERVAL: "{text}"')
    return total


def scale_interval(iv: Interval, factor: int | float | Decimal) -> Interval:
    """``iv * factor`` as PostgreSQL: each field is scaled; a fractional month carries into
    days (30 a month) and a fractional day into time (``'1 month' * 1.5`` = 1 mon 15 days)."""
    if isinstance(factor, int):
        return Interval(iv.months * factor, iv.days * factor, iv.micros * factor)
    f = float(factor)
    if f != f or f in (float("inf"), float("-inf")):
        raise DataError("interval out of range")
    months = iv.months * f
    whole_months = int(months)
    days = iv.days * f + (months - whole_months) * 30
    whole_days = int(days)
    micros = round(iv.micros * f + (days - whole_days) * DAY_MICROS)
    return Interval(whole_months, whole_days, micros)


def add_interval(ts: dt.datetime | dt.date, iv: Interval) -> dt.datetime:
    if type(ts) is dt.date:
        ts = dt.datetime(ts.year, ts.month, ts.day)
    if iv.months:
        month0 = ts.month - 1 + iv.months
        year = ts.year + month0 // 12
        month = month0 % 12 + 1
        day = min(ts.day, calendar.monthrange(year, month)[1])
        try:
            ts = ts.replace(year=year, month=month, day=day)
        except ValueError:
            raise DataError("timestamp out of range") from None
    try:
        return ts + dt.timedelta(days=iv.days, microseconds=iv.micros)
    except OverflowError:
        raise DataError("timestamp out of range") from None


def extract(part: str, v: object) -> object:
    """EXTRACT(part FROM v) / date_part('part', v)."""
    p = normalize_unit(part)
    if isinstance(v, Interval):
        return _extract_interval(p, v)
    if not isinstance(v, dt.date):
        raise ProgrammingError(f"EXTRACT needs a DATE or TIMESTAMP, got {type(v).__name__}")
    ts = v if isinstance(v, dt.datetime) else dt.datetime(v.year, v.month, v.day)
    simple = {
        "YEAR": ts.year, "MONTH": ts.month, "DAY": ts.day, "HOUR": ts.hour, "MINUTE": ts.minute,
        "QUARTER": (ts.month - 1) // 3 + 1, "DOW": (ts.weekday() + 1) % 7, "ISODOW": ts.isoweekday(),
        "DOY": ts.timetuple().tm_yday, "WEEK": ts.isocalendar()[1], "DECADE": ts.year // 10,
        "CENTURY": (ts.year + 99) // 100, "ISOYEAR": ts.isocalendar()[0],
    }
    if p in simple:
        return simple[p]
    if p == "SECOND":
        return ts.second + ts.microsecond / 1_000_000  # FLOAT, fractions included
    if p == "MILLISECOND":
        return ts.second * 1000 + ts.microsecond // 1000
    if p == "MICROSECOND":
        return ts.second * 1_000_000 + ts.microsecond
    if p == "EPOCH":
        return (ts - dt.datetime(1970, 1, 1)).total_seconds()
    raise ProgrammingError(f'unit "{part}" not recognized for EXTRACT')


def _extract_interval(p: str, v: Interval) -> object:
    secs = v.micros / 1_000_000
    table = {
        "YEAR": v.months // 12, "MONTH": v.months % 12, "DAY": v.days,
        "HOUR": int(secs // 3600), "MINUTE": int(secs % 3600 // 60), "SECOND": float(secs % 60),
        "EPOCH": float(v.months * 30 * 86400 + v.days * 86400 + secs),
    }
    if p not in table:
        raise ProgrammingError(f'unit "{p}" not recognized for EXTRACT from an INTERVAL')
    return table[p]


def strftime_sqlite(fmt: str, v: dt.date) -> str:
    """SQLite's strftime: Python's directives plus %f (seconds with milliseconds), %J, %s."""
    ts = v if isinstance(v, dt.datetime) else dt.datetime(v.year, v.month, v.day)
    out = []
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch != "%" or i + 1 >= len(fmt):
            out.append(ch)
            i += 1
            continue
        d = fmt[i + 1]
        i += 2
        if d == "f":
            out.append(f"{ts.second:02d}.{ts.microsecond // 1000:03d}")
        elif d == "s":
            out.append(str(int((ts - dt.datetime(1970, 1, 1)).total_seconds())))
        elif d == "J":
            out.append(repr((ts - dt.datetime(1970, 1, 1)).total_seconds() / 86400 + 2440587.5))
        elif d in "dmYHMSjwWyaAbBp%":
            out.append(ts.strftime("%" + d))
        else:
            raise ProgrammingError(f'strftime: unsupported directive "%{d}"')
    return "".join(out)
