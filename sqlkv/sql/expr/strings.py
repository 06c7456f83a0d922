"""String function implementations (arguments are non-NULL unless the function says otherwise).

``substr('hello', 2, 3)`` reaches `substr` as ``("hello", 2, 3)`` after the compiler checked
the argument types; each function works on Python str (or bytes where SQL allows it).
"""

from __future__ import annotations

from sqlkv.errors import DataError
from sqlkv.sql.casts import to_text

MAX_RESULT_CHARS = 100_000_000  # refuse repeat()/lpad() results that would exhaust memory


def octet_length(v: str | bytes) -> int:
    return len(v.encode("utf-8")) if isinstance(v, str) else len(v)


def substr(s: str | bytes, start: int, length: int | None = None) -> str | bytes:
    """1-based; positions before 1 count but yield nothing (PostgreSQL's substring)."""
    if length is None:
        return s[max(start, 1) - 1 :]
    if length < 0:
        raise DataError("negative substring length not allowed")
    end = start + length  # exclusive, 1-based
    begin = max(start, 1)
    if end <= begin:
        return s[:0]
    return s[begin - 1 : end - 1]


def trim_both(s: str, chars: str = " ") -> str:
    return s.strip(chars)


def trim_left(s: str, chars: str = " ") -> str:
    return s.lstrip(chars)


def trim_right(s: str, chars: str = " ") -> str:
    return s.rstrip(chars)


def replace(s: str, old: str, new: str) -> str:
    if old == "":
        return s
    return s.replace(old, new)


def instr(haystack: str, needle: str) -> int:
    return haystack.find(needle) + 1


def concat(*args: object) -> str:
    return "".join(to_text(a) for a in args if a is not None)


def concat_ws(sep: object, *args: object) -> str | None:
    if sep is None:
        return None
    return to_text(sep).join(to_text(a) for a in args if a is not None)


def _check_size(n: int) -> None:
    if n > MAX_RESULT_CHARS:
        raise DataError(f"requested string length {n} exceeds the limit of {MAX_RESULT_CHARS}")


def repeat(s: str, n: int) -> str:
    if n <= 0:
        return ""
    _check_size(len(s) * n)
    return s * n


def lpad(s: str, n: int, fill: str = " ") -> str:
    if n <= len(s):
        return s[: max(n, 0)]
    if not fill:
        return s
    _check_size(n)
    pad = n - len(s)
    return (fill * (pad // len(fill) + 1))[:pad] + s


def rpad(s: str, n: int, fill: str = " ") -> str:
    if n <= len(s):
        return s[: max(n, 0)]
    if not fill:
        return s
    _check_size(n)
    pad = n - len(s)
    return s + (fill * (pad // len(fill) + 1))[:pad]


def reverse(s: str) -> str:
    return s[::-1]


def left(s: str, n: int) -> str:
    return s[:n] if n >= 0 else s[:n] if -n < len(s) else ""


def right(s: str, n: int) -> str:
    if n >= 0:
        return s[len(s) - n :] if n else ""
    return s[-n:]


def hex_upper(v: object) -> str:
    """SQLite's hex(): the bytes of a BYTES value, or of the text form of anything else."""
    data = bytes(v) if isinstance(v, (bytes, bytearray)) else to_text(v).encode("utf-8")
    return data.hex().upper()


def quote(v: object) -> str:
    """SQLite's quote(): an SQL literal for the value."""
    if v is None:
        return "NULL"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (bytes, bytearray)):
        return "X'" + bytes(v).hex().upper() + "'"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, float)):
        return to_text(v)
    return "'" + to_text(v) + "'"


def ascii_code(s: str) -> int | None:
    return ord(s[0]) if s else 0


def chr_of(n: int) -> str:
    if not 0 < n <= 0x10FFFF:
        raise DataError(f"character number {n} is out of range")
    return chr(n)


def initcap(s: str) -> str:
    out = []
    prev_alnum = False
    for ch in s:
        out.append(ch.lower() if prev_alnum else ch.upper())
        prev_alnum = ch.isalnum()
    return "".join(out)


def split_part(s: str, sep: str, n: int) -> str:
    if n == 0:
        raise DataError("field position must not be zero")
    parts = s.split(sep) if sep else [s]
    if n < 0:
        n = len(parts) + n + 1
        if n <= 0:
            return ""
    return parts[n - 1] if n <= len(parts) else ""
