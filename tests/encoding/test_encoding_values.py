"""Row values (msgpack maps) and value lists: exact round trips, clear errors."""

from __future__ import annotations

import datetime
import math
import threading
import uuid
from decimal import Decimal

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding import decode_row_value, decode_values, encode_row_value, encode_values
from sqlkv.errors import CorruptionError, DataError

from .strategies import INT64_MAX, INT64_MIN

offsets = st.integers(-23 * 3600 - 59 * 60, 23 * 3600 + 59 * 60).map(
    lambda s: datetime.timezone(datetime.timedelta(seconds=s))
)
row_scalars = st.one_of(
    st.integers(INT64_MIN, INT64_MAX),
    st.integers(0, (1 << 64) - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
    st.booleans(),
    st.decimals(allow_nan=False, places=None),  # includes +-Infinity
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=offsets),
    st.times(),
    st.timedeltas(),
    st.uuids(),
)


def _identical(a: object, b: object) -> bool:
    """Equal, of the same type, and for Decimals the same representation (2.50 stays 2.50)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Decimal):
        return str(a) == str(b)
    if isinstance(a, datetime.datetime):
        return a == b and a.utcoffset() == b.utcoffset()  # type: ignore[union-attr]
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)  # type: ignore[arg-type]
    return a == b


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.integers(0, 1000), row_scalars, max_size=8))
def test_row_value_round_trip(columns: dict[int, object]) -> None:
    decoded = decode_row_value(encode_row_value(columns))
    assert decoded.keys() == columns.keys()
    assert all(_identical(decoded[k], v) for k, v in columns.items()), (decoded, columns)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | row_scalars, max_size=6))
def test_value_list_round_trip(values: list[object]) -> None:
    decoded = decode_values(encode_values(values))
    assert len(decoded) == len(values)
    assert all(_identical(d, v) for d, v in zip(decoded, values))
    assert decode_values(encode_values(tuple(values))) == decoded
    assert decode_values(encode_values(iter(values))) == decoded  # any iterable


def test_nan_and_decimal_representation_kept() -> None:
    row = {1: float("nan"), 2: Decimal("NaN"), 3: Decimal("2.50"), 4: Decimal("-0")}
    decoded = decode_row_value(encode_row_value(row))
    assert math.isnan(decoded[1])  # type: ignore[arg-type]
    assert [str(decoded[k]) for k in (2, 3, 4)] == ["NaN", "2.50", "-0"]


@pytest.mark.parametrize(
    "value",
    [1 << 64, -(1 << 63) - 1, object(), datetime.time(1, tzinfo=datetime.timezone.utc), {1, 2}],
)
def test_unstorable_values_are_data_errors(value: object) -> None:
    with pytest.raises(DataError):
        encode_row_value({1: value})
    with pytest.raises(DataError):
        encode_values([value])


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",  # never-used msgpack byte
        b"\x81\x01",  # map missing its value
        b"\x81\x01\x02\x03",  # trailing bytes
        b"\x05",  # a number where a map (or slot array) belongs
        b"\x81\x01\xd5\x63\x00\x00",  # unknown ext type 99
        b"\x81\x01\xc7\x03\x01abc",  # Decimal ext holding "abc"
        b"\x81\x01\xd6\x02\x00\x00\x00\x00",  # date ordinal 0
        b"\x81\x01\xa2\xff\xfe",  # invalid UTF-8 string
    ],
)
def test_corrupt_row_values(data: bytes) -> None:
    with pytest.raises(CorruptionError):
        decode_row_value(data)


def test_corrupt_value_list() -> None:
    with pytest.raises(CorruptionError):
        decode_values(encode_row_value({1: 2}))
    with pytest.raises(CorruptionError):
        decode_values(b"\x93\x01")


def test_formats_are_plain_msgpack() -> None:
    """Other tools can read rows: the map and native types are standard msgpack."""
    row = {1: 10, 2: "ann", 3: None, 4: b"\x00", 5: 1.5, 6: True}
    assert msgpack.unpackb(encode_row_value(row), strict_map_key=False) == row
    ext = msgpack.unpackb(encode_row_value({1: uuid.UUID(int=5)}), strict_map_key=False)[1]
    assert ext == msgpack.ExtType(7, uuid.UUID(int=5).bytes)


def test_threads_share_no_packer_state() -> None:
    """Each thread packs through its own Packer, whose default hook runs Python code."""
    errors: list[str] = []

    def work(seed: int) -> None:
        for i in range(300):
            row = {1: Decimal(seed * 1000 + i), 2: datetime.date.fromordinal(seed + i + 1), 3: "x" * seed}
            if decode_row_value(encode_row_value(row)) != row:
                errors.append(f"thread {seed} row {i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
