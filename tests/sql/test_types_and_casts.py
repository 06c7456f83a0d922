"""SqlType, type_from_ast, assign_cast (strict assignment) and cast (explicit CAST)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import sqlglot

from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql import casts as C, types as T

def ast_type(text: str):
    return sqlglot.parse_one(f"CAST(x AS {text})").args["to"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("INTEGER", T.INT), ("BIGINT", T.INT), ("SMALLINT", T.SqlType("INT", width=16)), ("INT8", T.INT),
        ("REAL", T.FLOAT), ("DOUBLE PRECISION", T.FLOAT), ("FLOAT", T.FLOAT),
        ("NUMERIC", T.DECIMAL), ("DECIMAL(10,2)", T.SqlType("DECIMAL", precision=10, scale=2)),
        ("NUMERIC(5)", T.SqlType("DECIMAL", precision=5, scale=0)),
        ("TEXT", T.TEXT), ("VARCHAR", T.TEXT), ("VARCHAR(20)", T.SqlType("TEXT", width=20)),
        ("CHAR(3)", T.SqlType("TEXT", width=3, fixed=True)), ("STRING", T.TEXT),
        ("BOOLEAN", T.BOOL), ("BOOL", T.BOOL), ("BLOB", T.BYTES), ("BYTEA", T.BYTES), ("BYTES", T.BYTES),
        ("DATE", T.DATE), ("TIMESTAMP", T.TIMESTAMP), ("DATETIME", T.TIMESTAMP),
    ],
)
def test_type_from_ast(text, expected):
    assert T.type_from_ast(ast_type(text)) == expected


@pytest.mark.parametrize("text", ["XML", "TIMETZ", "SERIALX"])
def test_unknown_type_names_it(text):
    with pytest.raises(ProgrammingError, match=text):
        T.type_from_ast(ast_type(text))


@pytest.mark.parametrize(
    "typ", [T.INT, T.SqlType("TEXT", width=20), T.SqlType("TEXT", width=2, fixed=True),
            T.SqlType("DECIMAL", precision=10, scale=2), T.TIMESTAMP],
)
def test_dict_roundtrip_and_sql(typ):
    assert T.SqlType.from_dict(typ.to_dict()) == typ
    assert T.type_from_ast(ast_type(typ.sql())) == typ


def test_assign_int():
    assert C.assign_cast(5, T.INT, "x") == 5
    assert C.assign_cast(None, T.INT, "x") is None
    assert C.assign_cast(2.0, T.INT, "x") == 2
    assert C.assign_cast(Decimal("3"), T.INT, "x") == 3
    with pytest.raises(DataError, match='value "abc" .* column "x" of type INT'):
        C.assign_cast("abc", T.INT, "x")
    with pytest.raises(DataError, match='"x"'):
        C.assign_cast(1.5, T.INT, "x")
    with pytest.raises(DataError, match="out of range.*x"):
        C.assign_cast(2**63, T.INT, "x")
    with pytest.raises(DataError):
        C.assign_cast(True, T.INT, "x")


def test_assign_float_and_decimal():
    v = C.assign_cast(3, T.FLOAT, "f")
    assert v == 3.0 and type(v) is float
    d = C.assign_cast(3, T.SqlType("DECIMAL", precision=5, scale=2), "p")
    assert d == Decimal("3.00") and str(d) == "3.00"
    assert str(C.assign_cast(1.005, T.SqlType("DECIMAL", precision=5, scale=2), "p")) == "1.01"
    with pytest.raises(DataError, match='"p"'):
        C.assign_cast(1000, T.SqlType("DECIMAL", precision=5, scale=2), "p")
    with pytest.raises(DataError):
        C.assign_cast("1.5", T.FLOAT, "f")


def test_assign_text():
    vc = T.SqlType("TEXT", width=3)
    assert C.assign_cast("abc", vc, "s") == "abc"
    assert C.assign_cast("ab   ", vc, "s") == "ab "  # trailing blanks beyond the width are dropped
    with pytest.raises(DataError, match='VARCHAR\\(3\\).*"s"'):
        C.assign_cast("abcd", vc, "s")
    with pytest.raises(DataError):
        C.assign_cast(12, T.TEXT, "s")


def test_assign_other_kinds():
    assert C.assign_cast(True, T.BOOL, "b") is True
    with pytest.raises(DataError):
        C.assign_cast(1, T.BOOL, "b")
    assert C.assign_cast(bytearray(b"x"), T.BYTES, "y") == b"x"
    assert C.assign_cast("2024-02-29", T.DATE, "d") == dt.date(2024, 2, 29)
    with pytest.raises(DataError, match='"d"'):
        C.assign_cast("2024-02-30", T.DATE, "d")
    assert C.assign_cast(dt.date(2024, 1, 2), T.TIMESTAMP, "t") == dt.datetime(2024, 1, 2)
    assert C.assign_cast("2024-01-02 03:04:05", T.TIMESTAMP, "t") == dt.datetime(2024, 1, 2, 3, 4, 5)
    with pytest.raises(DataError):
        C.assign_cast(dt.datetime(2024, 1, 2), T.DATE, "d")


@pytest.mark.parametrize(
    "value, typ, expected",
    [
        ("  42 ", T.INT, 42), (2.5, T.INT, 2), (3.5, T.INT, 4), (Decimal("2.5"), T.INT, 3),
        (Decimal("-2.5"), T.INT, -3), (True, T.INT, 1), ("1.5", T.FLOAT, 1.5), (7, T.FLOAT, 7.0),
        ("1.25", T.DECIMAL, Decimal("1.25")), (0.1, T.DECIMAL, Decimal("0.1")),
        (12, T.TEXT, "12"), (1.5, T.TEXT, "1.5"), (True, T.TEXT, "true"),
        (dt.date(2024, 1, 2), T.TEXT, "2024-01-02"),
        (dt.datetime(2024, 1, 2, 3, 4, 5), T.TEXT, "2024-01-02 03:04:05"),
        ("abcdef", T.SqlType("TEXT", width=3), "abc"), ("yes", T.BOOL, True), ("off", T.BOOL, False),
        (0, T.BOOL, False), ("hi", T.BYTES, b"hi"), (b"hi", T.TEXT, "hi"),
        ("2024-01-02 10:00:00", T.DATE, dt.date(2024, 1, 2)), (dt.datetime(2024, 1, 2, 5), T.DATE, dt.date(2024, 1, 2)),
        (None, T.INT, None),
    ],
)
def test_cast(value, typ, expected):
    result = C.cast(value, typ)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    "value, typ",
    [("abc", T.INT), ("1.5", T.INT), ("x", T.FLOAT), ("x", T.DECIMAL), ("maybe", T.BOOL),
     ("2024-13-01", T.DATE), (2**64, T.INT), (float("inf"), T.INT), (b"\xff", T.TEXT),
     (dt.date(2024, 1, 1), T.INT), (1, T.DATE)],
)
def test_cast_errors(value, typ):
    with pytest.raises(DataError):
        C.cast(value, typ)


def test_value_type():
    assert T.value_type(True) == T.BOOL
    assert T.value_type(1) == T.INT
    assert T.value_type(dt.datetime(2020, 1, 1)) == T.TIMESTAMP
    assert T.value_type(dt.date(2020, 1, 1)) == T.DATE
    assert T.value_type(None) == T.NULLTYPE
    with pytest.raises(DataError):
        T.value_type(object())


def test_decimal_column_holds_more_than_28_digits():
    """fit_decimal rounded with Python's default 28-digit context: DECIMAL(38,12) refused 32 digits."""
    typ = T.SqlType("DECIMAL", precision=38, scale=12)
    assert C.assign_cast(Decimal("31943874831932418390.01"), typ, "x") == Decimal("31943874831932418390.010000000000")
    assert C.assign_cast(Decimal("9" * 38), T.SqlType("DECIMAL", precision=38, scale=0), "x") == Decimal("9" * 38)
    with pytest.raises(DataError, match="out of range"):
        C.assign_cast(Decimal("1" * 39), T.SqlType("DECIMAL", precision=38, scale=0), "x")
