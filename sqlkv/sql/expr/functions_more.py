"""More built-in scalar functions: regular expressions, format/printf, to_char, age, make_date,
make_timestamp, md5/sha*, encode/decode.

They register in the same table as `functions` (`register`); compile_function finds a function
by the name sqlglot gives its node or by its SQL name (``regexp_replace`` arrives as
`exp.RegexpReplace`). Semantics are PostgreSQL's unless noted (printf is SQLite's).
"""

from __future__ import annotations

import base64
import calendar
import datetime as dt
import hashlib
import re
import uuid
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.expr import regex
from sqlkv.sql.expr.dates import Interval
from sqlkv.sql.expr.functions import ANY, INTS, NUMS, TEMPORAL, TEXT_OR_BYTES, TEXTS, register
from sqlkv.sql.expr.operators import INTERVAL
from sqlkv.sql.expr.temporal import statement_time
from sqlkv.sql.casts import cast, parse_timestamp, to_text
from sqlkv.sql.types import BYTES, DATE, TEXT, TIMESTAMP, SqlType


def _no_array(name: str):
    def result(_types: list[SqlType]) -> SqlType:
        raise NotSupportedError(f"{name}() returns a set of rows: sqlkv accepts it in FROM only")

    return result


# -- regular expressions
register("regexp_replace", 3, 4, regex.regexp_replace, TEXT, (TEXTS,))
# regexp_match(es) and regexp_split_to_array return arrays: sqlkv/sql/expr/arrayfuncs.py
register("regexp_split_to_table", 2, 3, lambda *a: None, _no_array("regexp_split_to_table"), (TEXTS,))


# -- format (PostgreSQL) and printf (SQLite)

_FORMAT_SPEC = re.compile(r"%(?:(\d+)\$)?(-)?(\d+)?([sIL%])")


def _quote_ident(v: str) -> str:
    return v if re.fullmatch(r"[a-z_][a-z0-9_$]*", v) else '"' + v.replace('"', '""') + '"'


def _quote_literal(v: object) -> str:
    if v is None:
        return "NULL"
    return "'" + to_text(v).replace("'", "''") + "'"


def sql_format(fmt: str, *args: object) -> str:
    """format('%s %I %L', ...): text, identifier, literal; ``%2$s`` positions, ``%-10s`` width."""
    out = []
    pos = 0
    next_arg = 0
    for m in _FORMAT_SPEC.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        argno, left, width, kind = m.groups()
        if kind == "%":
            out.append("%")
            continue
        index = int(argno) - 1 if argno else next_arg
        if index < 0 or index >= len(args):
            raise DataError("format(): too few arguments")
        next_arg = index + 1
        v = args[index]
        if kind == "s":
            text = "" if v is None else to_text(v)
        elif kind == "I":
            if v is None:
                raise DataError("format(): NULL cannot be formatted as an SQL identifier")
            text = _quote_ident(to_text(v))
        else:
            text = _quote_literal(v)
        if width:
            text = text.ljust(int(width)) if left else text.rjust(int(width))
        out.append(text)
    rest = fmt[pos:]
    if "%" in rest:
        raise DataError(f"format(): unrecognized format specifier in {rest!r}")
    out.append(rest)
    return "".join(out)


_PRINTF_SPEC = re.compile(r"%([-+ 0#,]*)(\d+|\*)?(?:\.(\d+|\*))?([diuxXofeEgGcsqQ%])")


def sql_printf(fmt: str, *args: object) -> str:
    """SQLite's printf/format: C conversions; a missing argument is NULL (0 or empty)."""
    out = []
    pos = 0
    it = iter(args)
    for m in _PRINTF_SPEC.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if width == "*":  # the width (then the precision) come from the arguments, as in C
            width = str(_printf_number(next(it, None), int))
            if width.startswith("-"):
                flags, width = flags + "-", width[1:]
        if prec == "*":
            prec = str(max(_printf_number(next(it, None), int), 0))
        v = next(it, None)
        spec = "%" + flags.replace(",", "") + (width or "") + (f".{prec}" if prec is not None else "")
        if conv in "diu":
            out.append((spec + "d") % _printf_number(v, int))
        elif conv in "xXo":
            out.append((spec + conv) % (_printf_number(v, int) & 0xFFFFFFFFFFFFFFFF))
        elif conv in "feEgG":
            out.append((spec + conv) % _printf_number(v, float))
        elif conv == "c":
            out.append((spec + "s") % ((to_text(v) or " ")[0] if v is not None else ""))
        elif conv == "q":
            out.append((spec + "s") % ("" if v is None else to_text(v).replace("'", "''")))
        elif conv == "Q":
            out.append((spec + "s") % _quote_literal(v))
        else:
            out.append((spec + "s") % ("" if v is None else to_text(v)))
    out.append(fmt[pos:])
    return "".join(out)


def _printf_number(v: object, kind: type) -> Any:
    if v is None:
        return kind(0)
    if isinstance(v, str):
        try:
            return kind(float(v)) if kind is int else float(v)
        except ValueError:
            return kind(0)
    try:
        return kind(v)
    except (TypeError, ValueError, OverflowError):
        return kind(0)


register("format", 1, None, lambda fmt, *a: None if fmt is None else sql_format(fmt, *a), TEXT,
         (TEXTS, ANY), null_ok=True)
register("printf", 1, None, lambda fmt, *a: None if fmt is None else sql_printf(fmt, *a), TEXT,
         (TEXTS, ANY), null_ok=True)


# -- to_char

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_DT_TOKENS = re.compile(
    r'FM|"[^"]*"|HH24|HH12|HH|MI|SS|MS|US|AM|PM|am|pm|A\.M\.|P\.M\.|a\.m\.|p\.m\.|YYYY|YYY|YY|Y|'
    r"MONTH|Month|month|MON|Mon|mon|MM|DAY|Day|day|DY|Dy|dy|DDD|DD|D|Q|.", re.DOTALL)


def _cased(word: str, pattern: str) -> str:
    if pattern.isupper():
        return word.upper()
    if pattern.islower():
        return word.lower()
    return word


def to_char_datetime(v: dt.date, fmt: str) -> str:
    ts = v if isinstance(v, dt.datetime) else dt.datetime(v.year, v.month, v.day)
    out = []
    fill = True
    for tok in _DT_TOKENS.findall(fmt):
        if tok == "FM":
            fill = False
            continue
        pad = fill
        fill = True
        if tok.startswith('"'):
            out.append(tok[1:-1])
            continue
        hour12 = ts.hour % 12 or 12
        numbers = {"HH24": (ts.hour, 2), "HH12": (hour12, 2), "HH": (hour12, 2), "MI": (ts.minute, 2),
                   "SS": (ts.second, 2), "MS": (ts.microsecond // 1000, 3), "US": (ts.microsecond, 6),
                   "YYYY": (ts.year, 4), "MM": (ts.month, 2), "DD": (ts.day, 2),
                   "DDD": (ts.timetuple().tm_yday, 3), "D": ((ts.weekday() + 1) % 7 + 1, 1),
                   "Q": ((ts.month - 1) // 3 + 1, 1)}
        if tok in numbers:
            n, width = numbers[tok]
            out.append(str(n).zfill(width) if pad else str(n))
        elif tok in ("YYY", "YY", "Y"):
            digits = len(tok)
            out.append(str(ts.year % 10 ** digits).zfill(digits if pad else 1))
        elif tok.upper() in ("AM", "PM", "A.M.", "P.M."):
            word = ("PM" if ts.hour >= 12 else "AM") if "." not in tok else ("P.M." if ts.hour >= 12 else "A.M.")
            out.append(word if tok[0].isupper() else word.lower())
        elif tok.upper() == "MONTH":
            word = _cased(_MONTHS[ts.month - 1], tok)
            out.append(word.ljust(9) if pad else word)
        elif tok.upper() == "MON":
            out.append(_cased(_MONTHS[ts.month - 1][:3], tok))
        elif tok.upper() == "DAY":
            word = _cased(_DAYS[ts.weekday()], tok)
            out.append(word.ljust(9) if pad else word)
        elif tok.upper() == "DY":
            out.append(_cased(_DAYS[ts.weekday()][:3], tok))
        else:
            out.append(tok)
    return "".join(out)


_NUM_FORMAT = re.compile(r"(FM)?(S)?([9,0]*)(?:\.([90]*))?")


def to_char_number(v: object, fmt: str) -> str:
    """Numbers with PostgreSQL's 9 (digit or blank), 0 (digit or zero), ',' (group), '.', FM, S."""
    m = _NUM_FORMAT.fullmatch(fmt)
    if m is None:
        raise NotSupportedError(f"to_char() number format {fmt!r} is not supported (9 0 , . FM S are)")
    fm, sign, int_part, frac_part = m.groups()
    frac_part = frac_part or ""
    d = Decimal(str(v)) if not isinstance(v, Decimal) else v
    d = d.quantize(Decimal(1).scaleb(-len(frac_part)), rounding=ROUND_HALF_UP)
    negative = d < 0
    digits_int, _, digits_frac = format(abs(d), "f").partition(".")
    slots = int_part.replace(",", "")
    if len(digits_int.lstrip("0") or "0") > len(slots):
        body = "#" * len(int_part) + ("." + "#" * len(frac_part) if frac_part else "")
        return body
    first_zero = slots.find("0")
    min_digits = len(slots) - first_zero if first_zero >= 0 else 0
    shown = digits_int.lstrip("0")
    if len(shown) < min_digits:
        shown = shown.rjust(min_digits, "0")
    if not shown and not frac_part:
        shown = "0"
    # place digits into the pattern from the right, keeping group separators between digits
    out = []
    di = len(shown) - 1
    for ch in reversed(int_part):
        if ch == ",":
            out.append("," if di >= 0 else " ")
        elif di >= 0:
            out.append(shown[di])
            di -= 1
        else:
            out.append(" ")
    text = "".join(reversed(out))
    if frac_part:
        text += "." + digits_frac.ljust(len(frac_part), "0")[: len(frac_part)]
    stripped = text.lstrip(" ")
    mark = ("-" if negative else "+") if sign else ("-" if negative else " ")
    text = text[: len(text) - len(stripped)] + mark + stripped
    return text.strip() if fm else text


def to_char(v: object, fmt: str) -> str:
    if isinstance(v, dt.date):
        return to_char_datetime(v, fmt)
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        return to_char_number(v, fmt)
    if isinstance(v, Interval):
        raise NotSupportedError("to_char() of an INTERVAL is not supported")
    raise ProgrammingError(f"to_char() does not accept {type(v).__name__}")


register("to_char", 2, 2, to_char, TEXT, (frozenset({"DATE", "TIMESTAMP", "INT", "FLOAT", "DECIMAL"}), TEXTS))


# -- dates


def age(ctx: Any, a: object, b: object = None) -> Interval:
    """The symbolic difference a - b in years, months, days and time (PostgreSQL's age)."""
    if b is None:
        now = statement_time(ctx)
        a, b = dt.datetime(now.year, now.month, now.day), a
    a, b = _timestamp(a), _timestamp(b)
    if a < b:
        return -age(ctx, b, a)
    months = (a.year - b.year) * 12 + (a.month - b.month)
    days = a.day - b.day
    micros = ((a.hour - b.hour) * 3600 + (a.minute - b.minute) * 60 + (a.second - b.second)) * 1_000_000 \
        + (a.microsecond - b.microsecond)
    if micros < 0:
        micros += 86_400_000_000
        days -= 1
    if days < 0:
        # borrow the length of b's month, as PostgreSQL does
        days += calendar.monthrange(b.year, b.month)[1]
        months -= 1
    return Interval(months, days, micros)


def _timestamp(v: object) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v
    if isinstance(v, dt.date):
        return dt.datetime(v.year, v.month, v.day)
    if isinstance(v, str):
        return parse_timestamp(v)
    return cast(v, TIMESTAMP)  # type: ignore[return-value]


def make_date(year: int, month: int, day: int) -> dt.date:
    try:
        return dt.date(year, month, day)
    except ValueError:
        raise DataError(f"date field value out of range: {year}-{month:02d}-{day:02d}") from None


def make_timestamp(year: int, month: int, day: int, hour: int, minute: int, sec: object) -> dt.datetime:
    d = make_date(year, month, day)
    s = Decimal(str(sec))
    if not (0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= s < 60):
        raise DataError(f"time field value out of range: {hour}:{minute:02d}:{sec}")
    whole = int(s)
    micros = int(((s - whole) * 1_000_000).to_integral_value(rounding=ROUND_HALF_UP))
    return dt.datetime(d.year, d.month, d.day, hour, minute, whole) + dt.timedelta(microseconds=micros)


register("age", 1, 2, age, INTERVAL, (TEMPORAL,), uses_ctx=True)
register("make_date", 3, 3, make_date, DATE, (INTS,))
register("make_timestamp", 6, 6, make_timestamp, TIMESTAMP, (INTS, INTS, INTS, INTS, INTS, NUMS))


# -- hashes and binary encodings


def _bytes(v: object) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)  # type: ignore[arg-type]


def encode(data: bytes, fmt: str) -> str:
    kind = fmt.strip().lower()
    if kind == "hex":
        return data.hex()
    if kind == "base64":
        return base64.b64encode(data).decode("ascii")
    if kind == "escape":
        return "".join(chr(b) if 32 <= b < 127 and b != 0x5C else ("\\\\" if b == 0x5C else f"\\{b:03o}")
                       for b in data)
    raise DataError(f'encode(): unrecognized encoding "{fmt}" (hex, base64, escape)')


def decode(text: str, fmt: str) -> bytes:
    kind = fmt.strip().lower()
    try:
        if kind == "hex":
            return bytes.fromhex(text)
        if kind == "base64":
            return base64.b64decode(text, validate=True)
    except ValueError:
        raise DataError(f"decode(): invalid {kind} data") from None
    if kind == "escape":
        return _unescape(text)
    raise DataError(f'decode(): unrecognized encoding "{fmt}" (hex, base64, escape)')


def _unescape(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if text[i + 1 : i + 2] == "\\":
                out.append(0x5C)
                i += 2
                continue
            digits = text[i + 1 : i + 4]
            if len(digits) == 3 and all(c in "01234567" for c in digits):
                out.append(int(digits, 8))
                i += 4
                continue
            raise DataError("decode(): invalid escape sequence")
        out.extend(text[i].encode("utf-8"))
        i += 1
    return bytes(out)


register("md5", 1, 1, lambda v: hashlib.md5(_bytes(v)).hexdigest(), TEXT, (TEXT_OR_BYTES,))
for _algo in ("sha224", "sha256", "sha384", "sha512"):
    register(_algo, 1, 1, lambda v, a=_algo: hashlib.new(a, _bytes(v)).digest(), BYTES, (TEXT_OR_BYTES,))
register("encode", 2, 2, lambda data, fmt: encode(_bytes(data), fmt), TEXT, (TEXT_OR_BYTES, TEXTS))
register("decode", 2, 2, decode, BYTES, (TEXTS,))


# -- UUIDs
register("gen_random_uuid uuid_generate_v4 uuid", 0, 0, uuid.uuid4, SqlType("UUID"), volatile=True)
