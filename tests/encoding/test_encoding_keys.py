"""The key codec: byte order == SQL order, exact round trips, prefix-freeness, ranges, ids."""

from __future__ import annotations

import datetime
import enum
import itertools
import sqlite3
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlkv.encoding import (
    NOT_NULL_ASC,
    NULL_ASC,
    NULL_DESC,
    append_value,
    decode_key,
    decode_uvarint,
    decode_value,
    encode_key,
    encode_uvarint,
    family_suffix,
    index_prefix,
    table_prefix,
)
from sqlkv.errors import DataError
from sqlkv.storage.kv import prefix_end

from .strategies import INT64_MAX, INT64_MIN, TYPES, column_values, compare_rows, same_value

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def schemas_and_rows(draw: st.DrawFn, min_rows: int = 2, max_rows: int = 8):  # type: ignore[no-untyped-def]
    ncols = draw(st.integers(1, 4))
    types = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=ncols, max_size=ncols))
    descending = draw(st.lists(st.booleans(), min_size=ncols, max_size=ncols))
    row = st.tuples(*[column_values(t) for t in types]).map(list)
    rows = draw(st.lists(row, min_size=min_rows, max_size=max_rows))
    return types, descending, rows


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


@SETTINGS
@given(schemas_and_rows())
def test_byte_order_is_sql_order(case) -> None:  # type: ignore[no-untyped-def]
    _types, descending, rows = case
    encoded = [encode_key(row, descending) for row in rows]
    for (ra, ea), (rb, eb) in itertools.combinations(zip(rows, encoded), 2):
        expected = compare_rows(ra, rb, descending)
        assert _sign((ea > eb) - (ea < eb)) == expected, (ra, rb, descending, ea.hex(), eb.hex())


@SETTINGS
@given(schemas_and_rows(min_rows=1, max_rows=3), st.binary(max_size=4), st.integers(0, 300))
def test_round_trip_with_prefix_and_family(case, prefix: bytes, family: int) -> None:  # type: ignore[no-untyped-def]
    _types, descending, rows = case
    for row in rows:
        key = encode_key(row, descending, prefix=prefix) + family_suffix(family)
        values, offset = decode_key(key, len(row), descending, offset=len(prefix))
        assert all(same_value(d, o) for d, o in zip(values, row)), (values, row)
        fam, end = decode_uvarint(key, offset)
        assert (fam, end) == (family, len(key))
        # the markers alone say the direction: decoding without `descending` agrees
        undirected, _ = decode_key(key, len(row), offset=len(prefix))
        assert all(same_value(d, o) for d, o in zip(undirected, row))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(sorted(TYPES)), st.booleans()), min_size=1, max_size=4), st.data())
def test_append_value_matches_encode_key(columns, data) -> None:  # type: ignore[no-untyped-def]
    row = [data.draw(column_values(t)) for t, _ in columns]
    descending = [d for _, d in columns]
    buf = bytearray(b"p")
    for value, desc in zip(row, descending):
        append_value(buf, value, desc)
    assert bytes(buf) == encode_key(row, descending, prefix=b"p")
    offset = 1
    for value, desc in zip(row, descending):
        decoded, is_desc, offset = decode_value(bytes(buf), offset)
        assert same_value(decoded, value) and is_desc == desc
    assert offset == len(buf)


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize(
    "chain",
    [
        ["", "\x00", "\x00\x00", "\x01", "a", "a\x00", "a\x00\x00", "a\x00b", "a\x01", "ab", "b", "\U0010ffff"],
        [b"", b"\x00", b"\x00\x00", b"\x00\xff", b"\x01", b"a", b"a\x00", b"ab", b"\xff", b"\xff\x00", b"\xff\xff"],
    ],
)
def test_prefix_ordering_of_strings_and_bytes(chain, descending: bool) -> None:  # type: ignore[no-untyped-def]
    assert chain == sorted(chain)
    encoded = [encode_key([v], [descending]) for v in chain]
    assert encoded == sorted(encoded, reverse=descending)
    # followed by more columns, a shorter string still sorts first (prefix-freeness)
    trailing = [encode_key([v, 0], [descending]) for v in chain]
    assert trailing == sorted(trailing, reverse=descending)


def test_int_boundaries_round_trip_and_sizes() -> None:
    assert encode_key([0]) == b"\x88" and encode_key([109]) == b"\xf5"
    assert len(encode_key([110])) == 2 and len(encode_key([-1])) == 2
    assert encode_key([79], [True]) == b"\x28" and encode_key([0], [True]) == b"\x77"
    assert len(encode_key([80], [True])) == 2 and len(encode_key([-1], [True])) == 2
    boundaries = [INT64_MIN, INT64_MIN + 1, -(1 << 32), -257, -256, -255, -1, 0, 1, 109, 110]
    boundaries += [255, 256, 65535, 65536, (1 << 56) - 1, 1 << 56, INT64_MAX - 1, INT64_MAX]
    for desc in (False, True):
        encoded = [encode_key([v], [desc]) for v in boundaries]
        assert encoded == sorted(encoded, reverse=desc)
        assert [decode_key(e, descending=[desc])[0][0] for e in encoded] == boundaries
        assert max(len(e) for e in encoded) == 9


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1, 1 << 100, -(1 << 70)])
@pytest.mark.parametrize("descending", [False, True])
def test_out_of_range_int_is_data_error(value: int, descending: bool) -> None:
    with pytest.raises(DataError, match="64-bit"):
        encode_key([value], [descending])


@pytest.mark.parametrize(
    "value",
    [
        object(),
        [1, 2],
        {"a": 1},
        "\ud800",
        datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
        datetime.time(1, tzinfo=datetime.timezone.utc),  # TIME is without time zone
    ],
)
def test_unencodable_values_are_data_errors(value: object) -> None:
    with pytest.raises(DataError):
        encode_key([value])
    with pytest.raises(DataError):
        append_value(bytearray(), value, True)


def test_float_zero_nan_and_infinities() -> None:
    assert encode_key([-0.0]) == encode_key([0.0])
    assert encode_key([float("nan")]) == encode_key([-float("nan")])
    ordered = [float("nan"), float("-inf"), -1e308, -5e-324, 0.0, 5e-324, 1.0, float("inf")]
    for desc in (False, True):
        encoded = [encode_key([v], [desc]) for v in ordered]
        assert encoded == sorted(encoded, reverse=desc)
        assert encoded[0] < encode_key([None], [True]) if desc else encoded[0] > encode_key([None])


def test_decimal_equal_values_encode_equal() -> None:
    for desc in (False, True):
        assert encode_key([Decimal("1.50")], [desc]) == encode_key([Decimal("1.5")], [desc])
        assert encode_key([Decimal("1E+2")], [desc]) == encode_key([Decimal("100")], [desc])
        assert encode_key([Decimal("-0")], [desc]) == encode_key([Decimal("0.000")], [desc])
    assert decode_key(encode_key([Decimal("2.50")]))[0] == [Decimal("2.5")]


def test_subclasses_encode_as_their_base_type() -> None:
    class Color(enum.IntEnum):
        RED = 7

    class MyStr(str):
        pass

    assert encode_key([Color.RED, MyStr("x")]) == encode_key([7, "x"])
    assert decode_key(encode_key([True, 1]))[0] == [True, 1]
    assert type(decode_key(encode_key([True]))[0][0]) is bool
    assert encode_key([bytearray(b"ab"), memoryview(b"cd")]) == encode_key([b"ab", b"cd"])


def test_nulls_first_ascending_last_descending_against_sqlite() -> None:
    rows = [(a, b) for a in (None, -3, 0, 7, 200) for b in (None, "", "a", "a\x00", "b")]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", rows)
    for desc_a, desc_b in itertools.product((False, True), repeat=2):
        order = f"a {'DESC' if desc_a else 'ASC'}, b {'DESC' if desc_b else 'ASC'}"
        expected = conn.execute(f"SELECT a, b FROM t ORDER BY {order}").fetchall()
        by_key = sorted(rows, key=lambda r: encode_key(list(r), [desc_a, desc_b]))
        assert by_key == expected, order


def test_uvarint_ids() -> None:
    ids = [0, 1, 109, 110, 255, 256, 65535, 65536, 1 << 40, (1 << 64) - 1]
    encoded = [encode_uvarint(i) for i in ids]
    assert encoded == sorted(encoded)
    for i, e in zip(ids, encoded):
        assert decode_uvarint(b"x" + e + b"y", 1) == (i, 1 + len(e))
    assert index_prefix(104, 1) == b"\xf0\x89" == table_prefix(104) + encode_uvarint(1)
    assert family_suffix(0) == b"\x88"
    for bad in (-1, 1 << 64):
        with pytest.raises(DataError):
            encode_uvarint(bad)


def test_decode_count_and_offset() -> None:
    key = index_prefix(104, 2) + encode_key(["x", None, 5], [False, True]) + family_suffix(0)
    values, offset = decode_key(key, 2, [False, True], offset=2)
    assert values == ["x", None]
    assert decode_key(key, offset=offset) == ([5, 0], len(key))
    assert decode_key(key, 0, offset=2) == ([], 2)


@SETTINGS
@given(st.sampled_from(sorted(TYPES)).flatmap(lambda t: st.lists(TYPES[t], min_size=1, max_size=5)))
def test_null_sentinels_bound_the_non_null_values(values) -> None:  # type: ignore[no-untyped-def]
    """``col IS NOT NULL`` spans: ascending from prefix+0x01, descending up to prefix+0xff."""
    prefix = index_prefix(104, 2)
    for value in values:
        asc = encode_key([value, 1], prefix=prefix)
        assert prefix + NULL_ASC < prefix + NOT_NULL_ASC <= asc
        assert asc[len(prefix)] > NOT_NULL_ASC[0]
        desc = encode_key([value, 1], [True], prefix=prefix)
        assert prefix <= desc < prefix + NULL_DESC
        assert encode_key([None], [True], prefix=prefix) == prefix + NULL_DESC
        assert encode_key([None], prefix=prefix) == prefix + NULL_ASC


@SETTINGS
@given(schemas_and_rows(min_rows=2, max_rows=6))
def test_prefix_end_bounds_exclude_exactly_the_equal_rows(case) -> None:  # type: ignore[no-untyped-def]
    """The planner's ``a > v`` start key is prefix_end(prefix + enc(v)): rows with a == v (any
    trailing columns and family) sort before it, rows with a after v sort at or after it."""
    _types, descending, rows = case
    bound_row = rows[0]
    prefix = index_prefix(104, 2)
    bound = prefix_end(encode_key(bound_row[:1], descending[:1], prefix))
    assert bound is not None  # a descending NULL (0xff) carries into the index id byte
    for row in rows:
        key = encode_key(row, descending, prefix) + family_suffix(3)
        order = compare_rows(row[:1], bound_row[:1], descending[:1])
        if order <= 0:
            assert key < bound
        else:
            assert key >= bound


def test_time_and_uuid_layout() -> None:
    """Extended marker 0x1e/0x1f, a tag byte, then the payload (complemented descending)."""
    import uuid

    t = datetime.time(13, 5, 6, 789)
    micros = ((13 * 60 + 5) * 60 + 6) * 1_000_000 + 789
    assert encode_key([t]) == bytes([0x1E, 0x01]) + micros.to_bytes(5, "big")
    assert encode_key([t], [True]) == bytes([0x1F, 0x01]) + bytes(b ^ 0xFF for b in micros.to_bytes(5, "big"))
    u = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    assert encode_key([u]) == bytes([0x1E, 0x02]) + u.bytes
    assert decode_key(encode_key([u, t], [True, False]))[0] == [u, t]


@pytest.mark.parametrize("raw", [
    bytes([0x1E]), bytes([0x1E, 0x09, 0, 0]), bytes([0x1E, 0x02]) + b"\x00" * 15,
    bytes([0x1E, 0x01]) + (86_400_000_000).to_bytes(5, "big"),
])
def test_corrupt_extended_values_are_reported(raw: bytes) -> None:
    from sqlkv.errors import CorruptionError

    with pytest.raises(CorruptionError):
        decode_key(raw)
