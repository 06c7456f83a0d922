"""Hypothesis strategies and the SQL-order oracle shared by the encoding tests."""

from __future__ import annotations

import datetime
import math
import uuid
from decimal import Decimal
from functools import cmp_to_key
from typing import Any

from hypothesis import strategies as st

from sqlkv.encoding.interval import Interval

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# Integers weighted towards the marker-length boundaries (0, 109/110, 255/256, 2**k) and the ends.
_BOUNDARY_INTS = sorted(
    {
        b + d
        for k in range(0, 64, 8)
        for b in (1 << k, -(1 << k), 0, 109, 110, -80, 79, 80, INT64_MAX, INT64_MIN)
        for d in (-2, -1, 0, 1, 2)
        if INT64_MIN <= b + d <= INT64_MAX
    }
)
ints = st.one_of(
    st.integers(-300, 300),
    st.sampled_from(_BOUNDARY_INTS),
    st.integers(INT64_MIN, INT64_MAX),
)
floats = st.floats(allow_nan=True, allow_infinity=True)
decimals = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False, places=None),
    st.sampled_from([Decimal("NaN"), Decimal("Infinity"), Decimal("-Infinity"), Decimal("-0")]),
    st.sampled_from([Decimal("1.50"), Decimal("1.5"), Decimal("100"), Decimal("1E+2"), Decimal("-0.001")]),
)
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8) | st.sampled_from(
    ["", "a", "a\x00", "ab", "a\x00b", "\x00", "\x00\x00", "\xff", "\U0010ffff"]
)
blobs = st.binary(max_size=8) | st.sampled_from([b"", b"\x00", b"\x00\x00", b"\xff", b"\x00\xff", b"\x01"])
dates = st.dates()
datetimes = st.datetimes()  # naive
bools = st.booleans()
times = st.times() | st.sampled_from([datetime.time(0), datetime.time(23, 59, 59, 999999), datetime.time(12)])  # naive
intervals = st.builds(Interval, st.integers(-10**6, 10**6), st.integers(-10**7, 10**7),
                      st.integers(-(10**15), 10**15)) | st.sampled_from([Interval(1), Interval(0, 30), Interval()])
uuids = st.uuids() | st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1), uuid.UUID(int=255)])

TYPES: dict[str, st.SearchStrategy[Any]] = {
    "int": ints,
    "float": floats,
    "decimal": decimals,
    "str": texts,
    "bytes": blobs,
    "bool": bools,
    "date": dates,
    "datetime": datetimes,
    "time": times,
    "uuid": uuids,
    "interval": intervals,
}


def column_values(type_name: str) -> st.SearchStrategy[Any]:
    """Values of one SQL column: its type, or NULL."""
    return st.none() | TYPES[type_name]


def _numeric_rank(value: Any) -> tuple[int, Any]:
    """NaN sorts before every other number (float and Decimal alike)."""
    if isinstance(value, float) and math.isnan(value):
        return (0, 0)
    if isinstance(value, Decimal) and value.is_nan():
        return (0, 0)
    return (1, value)


def compare_values(a: Any, b: Any, descending: bool) -> int:
    """SQL order of two values of one column: NULLs first ascending, last descending."""
    if a is None or b is None:
        if a is None and b is None:
            return 0
        result = -1 if a is None else 1
    else:
        ka, kb = _numeric_rank(a), _numeric_rank(b)
        result = (ka > kb) - (ka < kb)
    return -result if descending else result


def compare_rows(a: list[Any], b: list[Any], descending: list[bool]) -> int:
    for x, y, desc in zip(a, b, descending):
        result = compare_values(x, y, desc)
        if result:
            return result
    return 0


def sort_rows(rows: list[list[Any]], descending: list[bool]) -> list[list[Any]]:
    return sorted(rows, key=cmp_to_key(lambda a, b: compare_rows(a, b, descending)))


def same_value(decoded: Any, original: Any) -> bool:
    """decode(encode(x)) == x, as documented: -0.0 -> 0.0, any NaN -> NaN, Decimals normalised."""
    if original is None:
        return decoded is None
    if type(decoded) is not type(original):
        return False
    if isinstance(original, float):
        if math.isnan(original):
            return math.isnan(decoded)
        if original == 0:
            return decoded == 0 and math.copysign(1.0, decoded) == 1.0  # -0.0 decodes as 0.0
        return bool(decoded == original)
    if isinstance(original, Decimal):
        if original.is_nan():
            return decoded.is_nan()
        return decoded == original and decoded.as_tuple() == _normalised(original).as_tuple()
    return bool(decoded == original)


def _normalised(value: Decimal) -> Decimal:
    """The form the key codec decodes to: trailing zeros moved into the exponent."""
    if not value.is_finite():
        return value
    if value == 0:
        return Decimal(0)
    sign, digits, exponent = value.as_tuple()
    trimmed = list(digits)
    while trimmed[-1] == 0:
        trimmed.pop()
        exponent += 1  # type: ignore[operator]
    return Decimal((sign, tuple(trimmed), exponent))
