"""index_entries.py: the column-wise key encoding is `encode_key`'s, value for value."""

from __future__ import annotations

import datetime
import decimal

import pytest

from sqlkv.encoding.keys import encode_key
from sqlkv.encoding.varint import INT64_MAX
from sqlkv.encoding.key_columns import encode_column_keys

VALUES = [
    None, True, False, 0, 1, 109, 110, 111, 255, 256, 65535, 65536, 2**31, 2**32 + 5, INT64_MAX,
    -1, -109, -110, -2**31, -2**63, 0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), float("nan"),
    "", "a", "a\x00b", "\x00", "é€", b"", b"\x00\xff", decimal.Decimal("1.50"), decimal.Decimal("-7e-3"),
    datetime.date(2024, 2, 29), datetime.datetime(1999, 12, 31, 23, 59, 59, 999999),
]


@pytest.mark.parametrize("descending", [False, True])
def test_encode_column_is_encode_key_per_value(descending):
    expected = [encode_key([value], [descending]) for value in VALUES]
    assert encode_column_keys(VALUES, b"", descending) == expected


COLUMNS = [
    [0, 5, 109, 3],  # one-byte ints
    [0, 109, 110, 255, 256, 70000, 2**40, INT64_MAX, 7],  # mixed lengths
    [5, -1, 300],  # a negative: value by value
    [5, None, 300],  # a NULL: value by value
    [True, False],  # bools are not ints here
    ["", "a", "é€", "zz" * 40],  # strings without NUL: the C-level path
    ["a", "b\x00c"],  # a NUL to escape: value by value
    ["a", "\ud800"],  # a lone surrogate: the DataError encode_key raises
    [2**63],  # beyond int64: encode_key's own error or encoding
]


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("descending", [False, True])
def test_encode_column_of_one_type_is_encode_key_per_value(column, descending):
    def each(values):
        out = []
        for value in values:
            try:
                out.append(encode_key([value], [descending]))
            except Exception as exc:  # noqa: BLE001 -- the same error class is expected below
                return type(exc)
        return out

    expected = each(column)
    if isinstance(expected, type):
        with pytest.raises(expected):
            encode_column_keys(column, b"", descending)
    else:
        assert encode_column_keys(column, b"", descending) == expected


def test_values_of_rows_are_encode_values_and_report_its_error():
    from sqlkv.encoding.values import encode_values
    from sqlkv.errors import DataError
    from sqlkv.sql.ddl.index_entries import _values_of

    rows = [(1, "a", None), (decimal.Decimal("2.5"), datetime.date(2024, 1, 2), b"\x00"), ()]
    assert _values_of(iter(rows)) == [encode_values(list(row)) for row in rows]
    with pytest.raises(DataError):  # what encode_values raises for a value it cannot store
        encode_values([object()])
    with pytest.raises(DataError):
        _values_of([(1,), (object(),)])
