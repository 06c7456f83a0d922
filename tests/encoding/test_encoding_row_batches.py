"""`decode_row_values` and `decode_columns` (a scan batch's values parsed by one ``unpackb``
behind an array header): the same values as `decode_row_value` value by value, from maps and
slot arrays alike (mixed in one batch, arrays shorter than a column added later), and
corruption reported with `decode_row_value`'s error, never values shifted across rows."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.encoding import decode_row_value, encode_row_value
from sqlkv.encoding.values import decode_columns, decode_row_values, slot_width
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
    [GOOD, msgpack.packb(5), GOOD],  # a value that is neither a map nor an array (slots)
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


slot_rows = st.lists(st.tuples(st.dictionaries(st.integers(0, 11), row_scalars, max_size=8),
                               st.sampled_from(["slots", "map", "short"])), max_size=40)


@settings(max_examples=150, deadline=None)
@given(slot_rows, st.lists(st.integers(0, 14), min_size=1, max_size=5, unique=True), st.booleans())
def test_columns_of_slots_and_maps_equal_value_by_value(rows, ids: list[int], text: bool) -> None:
    """Rows written as slots (width 12), as maps (before slots, or sparse ids) and as slot
    arrays only as wide as their last non-NULL column (written before a column was added):
    each column read from the batch is what `decode_row_value` gives row by row (None where
    absent, ids past every array included)."""
    datas = []
    for row, form in rows:
        width = {"slots": 12, "map": None, "short": max(row, default=0) + 1}[form]
        datas.append(encode_row_value(row, width))
    got = decode_columns(datas, ids, text)
    assert sorted(got) == sorted(ids)
    for cid in ids:
        want = [decode_row_value(data).get(cid) for data in datas]
        if not text:
            want = [v.encode() if type(v) is str else v for v in want]
        assert len(got[cid]) == len(want) and all(_identical(g, w) for g, w in zip(got[cid], want))
    assert [set(m) for m in decode_row_values(datas)] == [{k for k, v in row.items() if v is not None}
                                                          for row, _form in rows]


def test_slot_values_are_arrays_indexed_by_column_id() -> None:
    data = encode_row_value({2: "ann", 4: 7}, width=6)
    assert msgpack.unpackb(data) == [None, None, "ann", None, 7, None]
    assert decode_row_value(data) == {2: "ann", 4: 7}
    assert encode_row_value({2: "ann", 9: 1}, width=6) == encode_row_value({2: "ann", 9: 1})  # id past width: map
    assert encode_row_value({}, width=6) == encode_row_value({})  # all NULL: the empty map
    assert slot_width([2, 3, 5]) == 6 and slot_width([]) is None
    assert slot_width([2, 300]) is None  # sparse ids after many ALTERs: maps, not 300 nils


@pytest.mark.parametrize("datas", CORRUPT_BATCHES)
def test_corrupt_value_in_a_batch_of_columns_is_reported_like_a_single_one(datas: list[bytes]) -> None:
    with pytest.raises(CorruptionError) as batch_error:
        decode_columns(datas, [1, 3])
    bad = next(data for data in datas if _fails(data))
    with pytest.raises(CorruptionError) as single_error:
        decode_row_value(bad)
    assert str(batch_error.value) == str(single_error.value)
