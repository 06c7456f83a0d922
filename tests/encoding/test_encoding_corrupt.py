"""Corrupt keys: decoding raises CorruptionError or yields values that re-encode to the same bytes.

"Never a wrong value" is checked as canonicality: whatever bytes a decode accepts, encoding the
decoded values again must reproduce exactly those bytes, so no two byte strings decode to the
same values and a damaged key is never silently read as some other key's values.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding import (
    append_value,
    decode_key,
    decode_uvarint,
    decode_value,
    encode_key,
)
from sqlkv.errors import CorruptionError

from .strategies import TYPES, column_values

SETTINGS = settings(max_examples=400, deadline=None)

# Random bytes rarely hit a real marker's payload rules; bias towards the interesting markers.
_marker_heavy = st.lists(
    st.one_of(st.integers(0, 255), st.sampled_from([0x00, 0x01, 0xFE, 0xFF, 0x88, 0x87, 0xF6, 0x03])),
    max_size=24,
).map(bytes)


def _reencode_check(data: bytes, descending: list[bool]) -> None:
    try:
        values, offset = decode_key(data, descending=descending)
    except CorruptionError:
        return
    assert offset == len(data)
    assert encode_key(values, descending) == data


def _reencode_undirected(data: bytes) -> None:
    """Decode without directions (the markers decide) and re-encode value by value."""
    try:
        values, _ = decode_key(data)
    except CorruptionError:
        values = None
    offset = 0
    buf = bytearray()
    directions: list[bool] = []
    try:
        while offset < len(data):
            value, desc, offset = decode_value(data, offset)
            append_value(buf, value, desc)
            directions.append(desc)
    except CorruptionError:
        assert values is None  # both ways of decoding reject the same bytes
        return
    assert bytes(buf) == data
    assert values is not None and encode_key(values, directions) == data


@SETTINGS
@given(st.binary(max_size=24) | _marker_heavy)
def test_random_bytes_decode_canonically_or_raise(data: bytes) -> None:
    _reencode_undirected(data)


@SETTINGS
@given(st.binary(max_size=24) | _marker_heavy, st.lists(st.booleans(), max_size=6))
def test_random_bytes_with_directions(data: bytes, descending: list[bool]) -> None:
    _reencode_check(data, descending)


@st.composite
def damaged_keys(draw: st.DrawFn) -> bytes:
    types = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=3))
    row = [draw(column_values(t)) for t in types]
    descending = draw(st.lists(st.booleans(), min_size=len(row), max_size=len(row)))
    key = bytearray(encode_key(row, descending))
    action = draw(st.sampled_from(["flip", "truncate", "insert"]))
    pos = draw(st.integers(0, len(key) - 1))
    if action == "flip":
        key[pos] ^= draw(st.integers(1, 255))
    elif action == "truncate":
        del key[pos:]
    else:
        key.insert(pos, draw(st.integers(0, 255)))
    return bytes(key)


@SETTINGS
@given(damaged_keys())
def test_damaged_keys_never_mis_decode(data: bytes) -> None:
    _reencode_undirected(data)


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"\x1e", "extended-type marker without a tag"),  # 0x1e: TIME/UUID, a tag must follow
        (b"\x88\xfe", "offset 1: unknown marker 0xfe"),
        (b"\xf7\x01", "truncated integer"),
        (b"\xf6\x05", "non-canonical integer"),  # 5 fits in the marker itself
        (b"\x86\xff\xff", "non-canonical integer"),  # -1 fits in one byte
        (b"\x18ab", "unterminated"),
        (b"\x18a\x00\x07", "bad escape"),
        (b"\x18\xff\x00\x01", "not valid UTF-8"),
        (b"\x03\x00\x00", "truncated float"),
        (b"\x1a\x00\x00\x00", "date ordinal 0"),
        (b"\x0a\x89\x01\x00", "non-canonical decimal"),  # digit pair "00"
    ],
)
def test_specific_corruptions(data: bytes, fragment: str) -> None:
    with pytest.raises(CorruptionError, match=fragment):
        decode_key(data)


def test_direction_mismatch_is_corruption() -> None:
    asc = encode_key([5, "x"])
    with pytest.raises(CorruptionError, match="value 0 is not a descending encoding"):
        decode_key(asc, descending=[True, False])
    with pytest.raises(CorruptionError, match="ends after 2 of 3"):
        decode_key(asc, 3)


def test_uvarint_rejects_negative_and_truncated() -> None:
    for data in (b"\x87\xff", b"\x00", b"", b"\xf7\x01"):
        with pytest.raises(CorruptionError):
            decode_uvarint(data, 0)
