"""`columns_end` (sqlkv/encoding/key_ends.py) against its oracle, `decode_key`: the same end
offset for every key decode_key reads, and the same CorruptionError for every key it rejects --
well-formed keys of every key type in both directions, damaged ones, random bytes, and every
first payload byte of every int length."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding import markers as M
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import from_python
from sqlkv.encoding.key_ends import columns_end, end_finder, ends_finder, single_end
from sqlkv.encoding.keys import decode_key, encode_key, index_prefix
from sqlkv.errors import CorruptionError

from .strategies import TYPES, column_values

SETTINGS = settings(max_examples=500, deadline=None)
PREFIX = index_prefix(104, 2)

ARRAYS = st.lists(st.none() | st.integers(-300, 300), max_size=4).map(SqlArray) | st.lists(
    st.none() | st.text(alphabet="a\x00\xff\u00e9", max_size=3), max_size=3).map(SqlArray)
JSONB = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(alphabet="a\x00", max_size=3),
                     lambda inner: st.lists(inner, max_size=2), max_leaves=4).map(from_python)
KEY_TYPES = {**TYPES, "array": ARRAYS, "jsonb": JSONB}


def outcome(fn, *args) -> tuple[str, object]:
    """What a call gave: its result, or the CorruptionError's message."""
    try:
        return "end", fn(*args)
    except CorruptionError as exc:
        return "corrupt", str(exc)


def assert_same_as_decode_key(key: bytes, count: int, descending: list[bool], offset: int) -> None:
    expected = outcome(lambda: decode_key(key, count, descending, offset)[1])
    assert outcome(columns_end, key, count, descending, offset) == expected
    assert outcome(end_finder(count, descending), key, offset) == expected
    if count == 1 and not descending[0]:
        assert outcome(single_end, key, offset) == expected
    batch = outcome(ends_finder(count, descending), [key, key], offset)
    assert batch == (expected if expected[0] == "corrupt" else ("end", [expected[1]] * 2))


@st.composite
def index_entries(draw: st.DrawFn) -> tuple[bytes, int, list[bool], int]:
    """An index entry key: prefix, 1-3 indexed values (any key type, NULLs among them), then a
    primary key; with the number of indexed values, their directions and where the PK starts."""
    types = draw(st.lists(st.sampled_from(sorted(KEY_TYPES)), min_size=1, max_size=3))
    values = [draw(st.none() | KEY_TYPES[t]) for t in types]
    descending = draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    head = encode_key(values, descending, PREFIX)
    pk = encode_key([draw(column_values(draw(st.sampled_from(["int", "str", "uuid"]))))], None)
    return head + pk, len(values), descending, len(head)


@SETTINGS
@given(index_entries())
def test_entry_keys_end_where_decode_key_ends(entry: tuple[bytes, int, list[bool], int]) -> None:
    key, count, descending, values_end = entry
    assert columns_end(key, count, descending, len(PREFIX)) == values_end
    assert end_finder(count, descending)(key, len(PREFIX)) == values_end
    assert_same_as_decode_key(key, count, descending, len(PREFIX))


@st.composite
def entry_batches(draw: st.DrawFn) -> tuple[list[bytes], int, list[bool]]:
    """Entry keys of one index (the same column types and directions), some maybe damaged."""
    types = draw(st.lists(st.sampled_from(sorted(KEY_TYPES)), min_size=1, max_size=2))
    descending = draw(st.lists(st.booleans(), min_size=len(types), max_size=len(types)))
    keys = []
    for _ in range(draw(st.integers(0, 6))):
        key = encode_key([draw(st.none() | KEY_TYPES[t]) for t in types] + [draw(st.integers(0, 10**6))],
                         descending, PREFIX)
        if draw(st.integers(0, 9)) == 0:
            key = key[:draw(st.integers(len(PREFIX), len(key)))]
        keys.append(key)
    return keys, len(types), descending


@SETTINGS
@given(entry_batches())
def test_batches_agree_with_decode_key(batch: tuple[list[bytes], int, list[bool]]) -> None:
    keys, count, descending = batch
    singles = [outcome(lambda k=key: decode_key(k, count, descending, len(PREFIX))[1]) for key in keys]
    failed = [one for one in singles if one[0] == "corrupt"]
    expected = failed[0] if failed else ("end", [end for _, end in singles])
    assert outcome(ends_finder(count, descending), keys, len(PREFIX)) == expected


@pytest.mark.parametrize("value", ["", "a", "\x00", "a\x00b", "\x00\x00", "\xff", "\u00e9t\u00e9", "\U0010ffff", "x" * 300])
@pytest.mark.parametrize("descending", [False, True])
def test_strings_with_zero_and_high_bytes(value: str, descending: bool) -> None:
    for item in (value, value.encode("utf-8", "surrogatepass")):
        head = encode_key([item], [descending], PREFIX)
        key = head + encode_key([7])
        assert columns_end(key, 1, [descending], len(PREFIX)) == len(head)
        assert end_finder(1, [descending])(key, len(PREFIX)) == len(head)


@st.composite
def damaged_entries(draw: st.DrawFn) -> tuple[bytes, int, list[bool]]:
    key, count, descending, _end = draw(index_entries())
    damaged = bytearray(key)
    action = draw(st.sampled_from(["flip", "truncate", "insert", "set"]))
    pos = draw(st.integers(len(PREFIX), len(key) - 1))
    if action == "flip":
        damaged[pos] ^= draw(st.integers(1, 255))
    elif action == "truncate":
        del damaged[pos:]
    elif action == "insert":
        damaged.insert(pos, draw(st.integers(0, 255)))
    else:  # a byte the codec treats specially
        damaged[pos] = draw(st.sampled_from([0x00, 0x01, 0xFE, 0xFF, 0x80, 0xF6, 0xFD, 0x20, 0x7F]))
    return bytes(damaged), count, descending


@SETTINGS
@given(damaged_entries())
def test_damaged_keys_fail_as_decode_key_fails(entry: tuple[bytes, int, list[bool]]) -> None:
    key, count, descending = entry
    assert_same_as_decode_key(key, count, descending, len(PREFIX))


_marker_heavy = st.lists(
    st.one_of(st.integers(0, 255), st.sampled_from([0x00, 0x01, 0xFE, 0xFF, 0x88, 0x87, 0xF6, 0x18, 0x19, 0x77])),
    max_size=24,
).map(bytes)


@SETTINGS
@given(st.binary(max_size=24) | _marker_heavy, st.lists(st.booleans(), min_size=1, max_size=4))
def test_random_bytes_as_decode_key(data: bytes, descending: list[bool]) -> None:
    assert_same_as_decode_key(data, len(descending), descending, 0)


_INT_MARKERS = [(m, False) for m in range(M.INT_BASE, M.INT_MAX_MARKER + 1)] + [
    (m, True) for m in range(M.INT_DESC_BASE, M.INT_DESC_MAX_MARKER + 1)]


@pytest.mark.parametrize("marker, descending", _INT_MARKERS)
def test_every_int_first_payload_byte(marker: int, descending: bool) -> None:
    """The canonical-length and 64-bit range checks read from an int's first payload byte."""
    for first in range(256):
        for rest in (b"", b"\x00" * 8, b"\xff" * 8, b"\x4f" * 8, b"\x00" * 7 + b"\x50"):
            assert_same_as_decode_key(bytes([marker, first]) + rest, 1, [descending], 0)
            assert_same_as_decode_key(bytes([0x92, marker, first]) + rest, 2, [False, descending], 0)


@pytest.mark.parametrize("values", [
    b"\x18\xff\xfe\x00\x01",  # not UTF-8
    b"\x18a\xc3\x00\x01",  # a cut UTF-8 sequence
    b"\x19\x00\x01\xff\xfe",  # descending: complemented 0xff 0xfe, not UTF-8
    b"\x18abc\x00\x07",  # a bad escape
    b"\x18abc\x00",  # a zero byte at the end
    b"\x18abc",  # no terminator
    b"\xf6\x05",  # an int longer than it needs
    b"\xfd\x80\x00\x00\x00\x00\x00\x00\x00",  # beyond the 64-bit range
    b"\xfe",  # a reserved marker
    b"",  # nothing where a value should be
])
@pytest.mark.parametrize("descending", [False, True])
def test_specific_corruptions(values: bytes, descending: bool) -> None:
    key = PREFIX + values
    assert outcome(lambda: decode_key(key, 1, [descending], len(PREFIX)))[0] == "corrupt"
    for key in (key, key + encode_key([5])):  # alone, and followed by a primary key
        assert_same_as_decode_key(key, 1, [descending], len(PREFIX))
