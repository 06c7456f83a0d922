"""encode_column_keys gives, value by value, exactly what encode_key gives (and the same error)."""

from __future__ import annotations

import datetime
import re
import random
from decimal import Decimal

import pytest

from sqlkv.encoding.key_columns import encode_column_keys
from sqlkv.encoding.keys import encode_key, table_prefix
from sqlkv.encoding.varint import INT64_MAX
from sqlkv.errors import DataError

EDGES = [0, 1, 109, 110, 111, 255, 256, 2**32, INT64_MAX, -1, -110, -(2**63),
         "", "a", "a\x00b", "\x00", "ünïcødé", "x" * 300, None, True, False, 1.5, -0.0, b"by\x00tes",
         Decimal("1.25"), datetime.date(2024, 2, 29)]


@pytest.mark.parametrize("prefix", [b"", table_prefix(104) + b"\x8a"])
def test_each_key_is_encode_key_of_its_value(prefix):
    rng = random.Random(3)
    values = EDGES + [rng.randrange(-(2**63), 2**63) for _ in range(500)] + [
        "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 12))) for _ in range(300)]
    assert encode_column_keys(values, prefix) == [encode_key((v,), None, prefix) for v in values]


@pytest.mark.parametrize("bad", ["bad \ud800", INT64_MAX + 1])
def test_a_value_encode_key_refuses_is_the_same_data_error(bad):
    with pytest.raises(DataError) as direct:
        encode_key((bad,))
    with pytest.raises(DataError) as batched:
        encode_column_keys(["ok", 7, bad])
    assert str(batched.value) == str(direct.value)


# -- ints encoded down the column (`int_column_pieces`), both directions -------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from sqlkv.encoding.key_columns import encode_column_pieces  # noqa: E402

INT_EDGES = [0, 1, 79, 80, 81, 109, 110, 111, 255, 256, 335, 336, 65535, 65536, 2**56 - 1, 2**56,
             INT64_MAX]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(INT_EDGES), st.integers(0, INT64_MAX), st.integers(0, 400)),
                min_size=1, max_size=60),
       st.booleans(), st.sampled_from([b"", table_prefix(104) + b"\x8a"]))
def test_an_int_column_is_encode_key_per_value_either_way(values, descending, prefix):
    expected = [encode_key((v,), (descending,), prefix) for v in values]
    assert encode_column_keys(values, prefix, descending) == expected
    joined = list(map(b"".join, zip(*encode_column_pieces(values, descending))))
    assert [prefix + key for key in joined] == expected


@pytest.mark.parametrize("column", [
    [5, -1, 300], [5, None, 300], [True, 200], [200, True], [False, 0], [2**63], [300, 2**63],
    [1.0, 300], [300, "x"], [],
])
@pytest.mark.parametrize("descending", [False, True])
def test_a_column_the_int_pieces_refuse_still_encodes_as_encode_key(column, descending):
    """Negative ints, NULLs, bools (ints to Python, not to the key codec), floats, strings and
    ints beyond 64 bits leave the column-wise int path; the bytes, or the error, are encode_key's."""
    try:
        expected = [encode_key((v,), (descending,)) for v in column]
    except DataError as exc:
        with pytest.raises(DataError, match=re.escape(str(exc))):
            encode_column_pieces(column, descending)
        return
    assert list(map(b"".join, zip(*encode_column_pieces(column, descending)))) == expected
    assert encode_column_keys(column, b"", descending) == expected
