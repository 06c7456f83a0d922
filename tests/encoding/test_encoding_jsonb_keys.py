"""JSONB key encoding (sqlkv/encoding/jsonb_keys.py): byte order is PostgreSQL's JSONB order in
both directions, also inside composite keys; decoding is canonical; damaged keys are
CorruptionError, never a wrong value."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from sqlkv.encoding.jsonb import from_python, parse
from sqlkv.encoding.keys import decode_key, encode_key
from sqlkv.errors import CorruptionError

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30),
                    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**6, max_value=10**6),
                    st.text(alphabet="ab\x00é", max_size=4))
TREES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(alphabet="ab\x00", max_size=3),
                                                                      inner, max_size=3)), max_leaves=8)
DOCS = TREES.map(lambda t: from_python(t))


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


@settings(max_examples=300)
@given(a=DOCS, b=DOCS, desc=st.booleans(), tail=st.integers(0, 3))
def test_key_order_is_jsonb_order(a, b, desc, tail):
    ka, kb = encode_key([a, tail], [desc, False]), encode_key([b, 0], [desc, False])
    expected = _sign((a > b) - (a < b)) * (-1 if desc else 1)
    if expected:
        assert _sign((ka > kb) - (ka < kb)) == expected
    else:
        assert encode_key([a], [desc]) == encode_key([b], [desc])  # equal values, equal keys


@settings(max_examples=200)
@given(doc=DOCS, desc=st.booleans())
def test_round_trip(doc, desc):
    key = encode_key([doc, "after"], [desc, False])
    (decoded, after), end = decode_key(key, 2, [desc, False])
    assert decoded == doc and after == "after" and end == len(key)
    assert encode_key([decoded, after], [desc, False]) == key  # canonical


def test_top_level_empty_array_sorts_first_and_numbers_are_canonical():
    values = [parse(t) for t in ('[]', 'null', '""', '"a"', '-1', '0', '1.5', 'false', 'true', '[[]]', '[1, 2]',
                                 '{}', '{"b": 1}', '{"a": 1, "b": 2}')]
    keys = [encode_key([v], [False]) for v in values]
    assert keys == sorted(keys)
    assert encode_key([parse("1.50")], [False]) == encode_key([parse("1.5")], [False])
    (back,), _ = decode_key(encode_key([parse('[2.50, 100]')], [False]), 1, [False])
    assert back.tree == [Decimal("2.5"), 100]


@settings(max_examples=300)
@given(doc=DOCS, desc=st.booleans(), position=st.integers(0, 200), byte=st.integers(0, 255))
def test_damaged_keys_never_mis_decode(doc, desc, position, byte):
    key = bytearray(encode_key([doc], [desc]))
    position %= len(key)
    key[position] = byte
    try:
        (value,), end = decode_key(bytes(key), 1, [desc])
    except CorruptionError:
        return
    assert encode_key([value], [desc]) == bytes(key)[:end]  # what decodes is exactly what the bytes say


@pytest.mark.parametrize("payload", [b"\x09", b"\x02ab", b"\x02a\x00\x07", b"\x06\x00\x00", b"\x03\x07",
                                     b"\x07\x00\x00\x00\x02\x62\x00\x01\x01\x61\x00\x01\x01",
                                     b"\x06\x00\x00\x00\x00"])
def test_corrupt_payloads(payload):
    # unknown tag, unterminated string, bad escape, short count, NaN number, keys out of order,
    # a top-level empty array spelled as a counted one
    with pytest.raises(CorruptionError):
        decode_key(b"\x1e\x05" + payload, 1, [False])
