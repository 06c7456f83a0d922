"""`decode_row_values` (a scan batch's values parsed by one ``unpackb`` behind an array
header): the same maps as `decode_row_value` value by value, and corruption reported with
`decode_row_value`'s error, never maps shifted across values."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding import decode_row_value, encode_row_value
from sqlkv.encoding.values import decode_row_values
from sqlkv.errors import CorruptionError

from .test_encoding_values import _identical, row_scalars


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 1000), row_scalars, max_size=6), max_size=40))
def test_batch_decode_equals_value_by_value(rows: list[dict[int, object]]) -> None:
    datas = [encode_row_value(row) for row in rows]
    got = decode_row_values(datas)
    assert len(got) == len(rows)
    for decoded, data in zip(got, datas):
        want = decode_row_value(data)
        assert decoded.keys() == want.keys()
        assert all(_identical(decoded[k], v) for k, v in want.items())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 1000), row_scalars, max_size=6), max_size=40))
def test_batch_decode_without_text_differs_only_in_strings(rows: list[dict[int, object]]) -> None:
    """``text=False`` (a scan reading no TEXT column) leaves each string as its UTF-8 bytes;
    every other value -- bytes, numbers, ext types -- is what the full decode gives."""
    datas = [encode_row_value(row) for row in rows]
    for decoded, data in zip(decode_row_values(datas, text=False), datas):
        want = decode_row_value(data)
        assert decoded.keys() == want.keys()
        for k, v in want.items():
            assert _identical(decoded[k], v.encode() if type(v) is str else v)


GOOD = encode_row_value({1: 2, 3: "x"})
CORRUPT_BATCHES = [
    # one value holding two objects, the next truncated: the concatenation still parses
    [GOOD, encode_row_value({1: 2}) + msgpack.packb(5), GOOD[:-1]],
    # a map split across two values: together they parse as one map
    [b"\x81\x01", b"\x02", GOOD],
    [GOOD, msgpack.packb([1, 2]), GOOD],  # a value that is not a map
    [GOOD, b"", GOOD],  # an empty value
    [GOOD, b"\xc1", GOOD],  # a byte msgpack never uses
]


@pytest.mark.parametrize("datas", CORRUPT_BATCHES)
def test_corrupt_value_in_a_batch_is_reported_like_a_single_one(datas: list[bytes]) -> None:
    with pytest.raises(CorruptionError) as batch_error:
        decode_row_values(datas)
    bad = next(data for data in datas if _fails(data))
    with pytest.raises(CorruptionError) as single_error:
        decode_row_value(bad)
    assert str(batch_error.value) == str(single_error.value)


def _fails(data: bytes) -> bool:
    try:
        decode_row_value(data)
    except CorruptionError:
        return True
    return False
