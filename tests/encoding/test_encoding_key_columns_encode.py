"""encode_column_keys gives, value by value, exactly what encode_key gives (and the same error)."""

from __future__ import annotations

import datetime
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
