"""ARRAY values in the key codec (order-preserving, strict decoding) and in row values (msgpack ext 9).

The order oracle is PostgreSQL's array comparison written out independently of the codec:
element by element, a NULL element after every non-NULL one, a prefix before the longer array.
"""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.encoding.values import decode_row_value, encode_row_value
from sqlkv.errors import CorruptionError, NotSupportedError

from tests.encoding.strategies import TYPES, compare_values, same_value

ELEMENT_TYPES = ["int", "str", "decimal", "float", "bool", "date", "datetime", "bytes", "uuid"]


def pg_array_cmp(a: list, b: list) -> int:
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return 1 if x is None else -1
        r = compare_values(x, y, False)
        if r:
            return r
    return (len(a) > len(b)) - (len(a) < len(b))


def arrays_of(type_name: str) -> st.SearchStrategy[list]:
    elements = TYPES[type_name]
    if type_name == "decimal":  # NaN is not a DECIMAL value an array holds in a key (PostgreSQL: NaN last)
        elements = elements.filter(lambda d: not d.is_nan())
    return st.lists(st.none() | elements, max_size=5)


@st.composite
def array_pairs(draw):
    type_name = draw(st.sampled_from(ELEMENT_TYPES))
    return draw(arrays_of(type_name)), draw(arrays_of(type_name))


def sign(n: int) -> int:
    return (n > 0) - (n < 0)


@settings(max_examples=400, deadline=None)
@given(array_pairs(), st.booleans())
def test_key_order_is_postgresql_array_order(pair, descending):
    a, b = pair
    ka = encode_key([SqlArray(a)], [descending])
    kb = encode_key([SqlArray(b)], [descending])
    expected = pg_array_cmp(a, b) * (-1 if descending else 1)
    assert sign((ka > kb) - (ka < kb)) == expected


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ELEMENT_TYPES).flatmap(arrays_of), st.booleans(), st.integers(-5, 500))
def test_key_round_trip_and_next_value(items, descending, after):
    key = encode_key([SqlArray(items), after], [descending])
    (decoded, rest), end = decode_key(key)
    assert end == len(key) and rest == after
    assert isinstance(decoded, SqlArray) and len(decoded) == len(items)
    assert all(same_value(d, o) for d, o in zip(decoded, items))


def test_documented_bytes():
    assert encode_key([SqlArray([1, None])]).hex() == "1e0402890301"
    assert encode_key([SqlArray([])]).hex() == "1e0401"
    # descending: the marker 0x1f, the tag, then every byte complemented
    assert encode_key([SqlArray([1, None])], [True]).hex() == "1f04fd76fcfe"


def test_null_array_is_the_column_null():
    assert encode_key([None]) < encode_key([SqlArray([])]) < encode_key([SqlArray([None])])


@pytest.mark.parametrize("key, why", [
    (bytes.fromhex("1e0402"), "key ends where a value was expected"),
    (bytes.fromhex("1e040289"), "array without its end byte"),
    (bytes.fromhex("1e0405"), "is not an array item"),
    (bytes.fromhex("1e040200"), "a NULL value inside an array"),
    (bytes.fromhex("1e0402" + "77" + "01"), "a descending value inside an array"),
    (bytes.fromhex("1e0402" + "1e0401" + "01"), "a nested array"),
    (bytes.fromhex("1e0402" + "89" + "02" + "1861000101"), "elements of different types"),
])
def test_corrupt_array_keys_are_reported(key, why):
    with pytest.raises(CorruptionError, match=why):
        decode_key(key)


def test_multi_dimensional_arrays_are_refused_in_keys():
    with pytest.raises(NotSupportedError, match="multi-dimensional"):
        encode_key([SqlArray([SqlArray([1])])])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ELEMENT_TYPES).flatmap(arrays_of))
def test_row_value_round_trip(items):
    decoded = decode_row_value(encode_row_value({2: SqlArray(items), 3: "x"}))
    assert decoded[3] == "x" and isinstance(decoded[2], SqlArray)
    for d, o in zip(decoded[2], items, strict=True):
        if isinstance(o, float) and o != o:
            assert d != d
        else:
            assert d == o and type(d) is type(o)


def test_row_value_keeps_decimal_scale_and_nulls():
    value = SqlArray([Decimal("1.50"), None, Decimal("-0")])
    decoded = decode_row_value(encode_row_value({1: value}))[1]
    assert [str(v) for v in decoded] == ["1.50", "None", "-0"]


@pytest.mark.parametrize("payload", [b"\xc1", b"\x05", b"\x91\xd4\x09\x00"])
def test_corrupt_array_row_values_are_reported(payload):
    import msgpack

    data = msgpack.packb({1: msgpack.ExtType(9, payload)})
    with pytest.raises(CorruptionError, match="corrupt row value"):
        decode_row_value(data)


def test_array_order_and_equality_in_python():
    assert SqlArray([1, None]) == SqlArray([1, None])  # NULL elements are equal in array equality
    assert hash(SqlArray([1, 2])) == hash(SqlArray([1, 2]))
    ordered = [SqlArray([]), SqlArray([1]), SqlArray([1, 2]), SqlArray([1, None]), SqlArray([2]), SqlArray([None])]
    assert sorted(reversed(ordered)) == ordered
    assert SqlArray([datetime.date(2024, 1, 1)]) < SqlArray([datetime.date(2024, 1, 2)])
