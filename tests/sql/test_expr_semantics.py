"""Expression semantics: 3VL, NULL propagation, arithmetic, strict typing, folding, parameters."""

from __future__ import annotations

import datetime as dt
import itertools
import sqlite3
from decimal import Decimal

import pytest
import sqlglot

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.expr import (
    CompileEnv,
    compile_expr,
    compile_predicate,
    eval_constant,
    infer_type,
    is_constant,
)
from sqlkv.sql.types import BOOL, DATE, FLOAT, INT, NULLTYPE, TEXT, TIMESTAMP, SqlType

COLUMNS = [
    Column("a", "t", INT), Column("b", "t", INT), Column("s", "t", TEXT), Column("d", "t", DATE),
    Column("f", "t", FLOAT), Column("p", "t", BOOL), Column("q", "t", BOOL), Column("ts", "t", TIMESTAMP),
    Column("u", "t", None),
]
ROW = (7, None, "hello", dt.date(2024, 1, 31), 2.5, True, None, dt.datetime(2024, 1, 31, 12), "free")


def node(sql: str):
    return sqlglot.parse_one(f"SELECT {sql}").expressions[0]


def ev(sql: str, row: tuple = ROW, params=()):
    env = CompileEnv(ExecContext(params=params))
    return compile_expr(node(sql), Scope(COLUMNS), env)(row)


def pred(sql: str, row: tuple = ROW, params=()):
    env = CompileEnv(ExecContext(params=params))
    return compile_predicate(node(sql), Scope(COLUMNS), env)(row)


def sql_literal(v) -> str:
    return "NULL" if v is None else ("TRUE" if v else "FALSE")


def sqlite_bool(expr: str):
    v = sqlite3.connect(":memory:").execute(f"SELECT {expr}").fetchone()[0]
    return None if v is None else bool(v)


TRUTH = [True, False, None]


@pytest.mark.parametrize("x, y", list(itertools.product(TRUTH, TRUTH)))
def test_and_or_truth_tables_match_sqlite(x, y):
    for op in ("AND", "OR"):
        text = f"{sql_literal(x)} {op} {sql_literal(y)}"
        assert ev(text) == sqlite_bool(text)
        # the predicate form is TRUE-only
        assert pred(text) is (sqlite_bool(text) is True)


@pytest.mark.parametrize("x", TRUTH)
def test_not_and_is_tests(x):
    lit = sql_literal(x)
    assert ev(f"NOT {lit}") == sqlite_bool(f"NOT {lit}")
    assert ev(f"{lit} IS NULL") is (x is None)
    assert ev(f"{lit} IS TRUE") is (x is True)
    assert ev(f"{lit} IS NOT TRUE") is (x is not True)
    assert ev(f"{lit} IS FALSE") is (x is False)
    assert ev(f"{lit} IS NOT FALSE") is (x is not False)


def test_three_way_and_or_with_columns():
    assert ev("p AND q AND a > 1") is None
    assert ev("p AND q AND a > 100") is False
    assert ev("q OR b > 1 OR p") is True
    assert ev("q OR b > 1 OR NOT p") is None
    assert pred("q OR b > 1 OR NOT p") is False


def test_null_propagation():
    for text in ("a + b", "b * 2", "-b", "b / 0", "b || 'x'", "b = 1", "b < a", "lower(CAST(b AS TEXT))"):
        assert ev(text) is None, text


def test_integer_arithmetic_like_c():
    assert ev("7 / 2") == 3 and ev("-7 / 2") == -3 and ev("7 / -2") == -3
    assert ev("-7 % 2") == -1 and ev("7 % -2") == 1
    assert ev("a / 0") is None and ev("a % 0") is None and ev("f / 0") is None
    assert ev("a DIV 2") == 3
    assert type(ev("a + f")) is float and ev("a + f") == 9.5
    assert ev("a + 1.5") == 8.5


def test_integer_overflow():
    with pytest.raises(DataError, match="integer out of range"):
        ev("9223372036854775807 + a")
    with pytest.raises(DataError, match="integer out of range"):
        ev("-9223372036854775808 - a")
    assert ev("-9223372036854775808") == -(2**63)
    with pytest.raises(DataError, match="integer out of range"):
        ev("-(-9223372036854775808 + 0 * a)")
    with pytest.raises(DataError):
        ev("(-9223372036854775808 + 0 * a) / -1")


def test_folding_defers_errors_to_run_time():
    # The division would fail only if a row reaches it: compiling must not raise.
    env = CompileEnv(ExecContext())
    fn = compile_expr(node("CAST('x' || '' AS INT)"), Scope(COLUMNS), env)
    with pytest.raises(DataError):
        fn(ROW)
    fn = compile_expr(node("9223372036854775807 * 2"), Scope(COLUMNS), env)
    with pytest.raises(DataError):
        fn(ROW)


def test_comparison_and_untyped_literals():
    assert ev("a = '7'") is True
    assert ev("d = '2024-01-31'") is True
    assert ev("d < '2024-02-01' AND d > '2023-12-31'") is True
    assert ev("ts > d") is True  # DATE promotes to TIMESTAMP
    assert ev("d BETWEEN '2024-01-01' AND '2024-12-31'") is True
    assert ev("s > 'a' AND s < 'z'") is True
    assert ev("1 = 1.0") is True


@pytest.mark.parametrize(
    "text",
    ["a = s", "s = 1", "a + s", "s * 2", "d = 1", "p = 1", "p AND a", "NOT a", "CASE WHEN a THEN 1 END",
     "a LIKE 'x'", "lower(a)", "a IN ('x', 1)", "1 = 1 = 1", "-s", "d + 1.5", "a IS TRUE",
     "COALESCE(a, s)"],
)
def test_strict_type_errors_at_compile_time(text):
    env = CompileEnv(ExecContext())
    with pytest.raises((ProgrammingError, DataError)):
        compile_expr(node(text), Scope(COLUMNS), env)


def test_bad_text_for_typed_operand_is_data_error():
    with pytest.raises(DataError, match='"abc"'):
        ev("a = 'abc'")


def test_untyped_column_is_checked_per_row():
    assert ev("u = 'free'") is True
    with pytest.raises(ProgrammingError, match="operator does not exist"):
        ev("u = 1")
    with pytest.raises(ProgrammingError):
        ev("u + 1")


def test_in_list():
    assert ev("a IN (1, 7)") is True
    assert ev("a IN (1, 2)") is False
    assert ev("a IN (1, NULL)") is None
    assert ev("a NOT IN (1, NULL)") is None
    assert ev("a NOT IN (1, 2)") is True
    assert ev("b IN (1, 2)") is None
    assert ev("a IN (b, 7)") is True
    assert ev("a IN (b, 8)") is None
    assert ev("d IN ('2024-01-31', '2024-02-01')") is True
    assert ev("NULL IN ()") is False and ev("b NOT IN ()") is True  # SQLite's empty list


def test_between_3vl():
    assert ev("a BETWEEN 1 AND 10") is True
    assert ev("a NOT BETWEEN 1 AND 10") is False
    assert ev("a BETWEEN b AND 10") is None
    assert ev("a BETWEEN b AND 5") is False
    assert ev("a BETWEEN 8 AND b") is False


def test_case_forms():
    assert ev("CASE a WHEN 1 THEN 'one' WHEN 7 THEN 'seven' END") == "seven"
    assert ev("CASE b WHEN 1 THEN 'one' ELSE 'other' END") == "other"  # NULL matches no WHEN
    assert ev("CASE WHEN b > 1 THEN 1 WHEN a > 1 THEN 2 END") == 2
    assert ev("CASE WHEN b > 1 THEN 1 END") is None
    v = ev("CASE WHEN a > 1 THEN 1 ELSE 2.5 END")
    assert v == 1.0 and type(v) is float  # one result type: FLOAT


def test_coalesce_nullif_ifnull_cast_concat():
    assert ev("COALESCE(b, NULL, a)") == 7
    assert ev("IFNULL(b, 3)") == 3
    assert ev("NULLIF(a, 7)") is None and ev("NULLIF(a, 8)") == 7
    assert ev("CAST(a AS TEXT) || '!'") == "7!"
    assert ev("s || a") == "hello7"
    assert ev("s || b") is None
    assert ev("CAST('2024-02-29' AS DATE)") == dt.date(2024, 2, 29)
    assert ev("CAST(f AS DECIMAL(4,1))") == Decimal("2.5")
    assert ev("TRY_CAST('x' AS INT)") is None


def test_is_distinct_from():
    assert ev("b IS DISTINCT FROM NULL") is False
    assert ev("a IS DISTINCT FROM NULL") is True
    assert ev("a IS NOT DISTINCT FROM 7") is True
    assert ev("b IS NOT DISTINCT FROM b") is True


def test_parameters():
    assert ev("a + ?", params=(3,)) == 10
    assert ev("? + ?", params=(1, 2)) == 3
    assert ev(":x * 2", params={"x": 4}) == 8
    assert ev("d = ?", params=("2024-01-31",)) is True
    with pytest.raises(ProgrammingError, match="parameter"):
        ev("a + ?", params=())
    with pytest.raises(ProgrammingError, match="operator does not exist"):
        ev("a + ?", params=("x",))
    with pytest.raises(ProgrammingError):
        ev(":x", params=(1,))


def test_parameter_index_from_parser_meta():
    n = node("? + ?")
    placeholders = list(n.find_all(sqlglot.exp.Placeholder))
    placeholders[0].meta["param_index"] = 1
    placeholders[1].meta["param_index"] = 0
    fn = compile_expr(n, Scope(COLUMNS), CompileEnv(ExecContext(params=(10, "x"))))
    with pytest.raises(ProgrammingError):
        fn(ROW)  # "x" + 10: the indexes were honoured


def test_params_read_at_run_time():
    ctx = ExecContext(params=(1,))
    fn = compile_expr(node("a + ?"), Scope(COLUMNS), CompileEnv(ctx))
    assert fn(ROW) == 8
    ctx.params = (100,)
    assert fn(ROW) == 107


def test_outer_column_reference_reads_cell():
    outer = Scope([Column("o", "x", INT)])
    inner = Scope([Column("a", "t", INT)], outer=outer)
    fn = compile_expr(node("a + o"), inner, CompileEnv(ExecContext()))
    outer.cell[0] = (100,)
    assert fn((1,)) == 101


def test_unknown_and_unsupported():
    with pytest.raises(ProgrammingError, match="unknown function: foo\\(\\)"):
        ev("foo(1)")
    with pytest.raises(ProgrammingError, match="column \"nope\" does not exist"):
        ev("nope + 1")
    with pytest.raises(ProgrammingError, match="aggregate"):
        ev("sum(a)")
    with pytest.raises(ProgrammingError, match="wrong number of arguments"):
        ev("substr(s)")
    with pytest.raises(NotSupportedError):
        ev("(SELECT 1)")
    with pytest.raises(NotSupportedError):
        ev("s COLLATE NOCASE")


def test_infer_type():
    scope = Scope(COLUMNS)
    assert infer_type(node("a + 1"), scope) == INT
    assert infer_type(node("a + f"), scope) == FLOAT
    assert infer_type(node("a > 1"), scope) == BOOL
    assert infer_type(node("s || 'x'"), scope) == TEXT
    assert infer_type(node("?"), scope) == NULLTYPE
    assert infer_type(node("CAST(a AS VARCHAR(5))"), scope) == SqlType("TEXT", width=5)
    assert infer_type(node("d + 1"), scope) == DATE
    assert infer_type(node("(SELECT 1)"), scope) == NULLTYPE


def test_is_constant_and_eval_constant():
    assert is_constant(node("1 + ?"))
    assert is_constant(node("now()"))
    assert not is_constant(node("a + 1"))
    assert not is_constant(node("(SELECT 1)"))
    env = CompileEnv(ExecContext(params=(41,), now=dt.datetime(2020, 5, 6, 7, 8, 9)))
    assert eval_constant(node("? + 1"), env) == 42
    assert eval_constant(node("now()"), env) == dt.datetime(2020, 5, 6, 7, 8, 9)
    assert eval_constant(node("current_date"), env) == dt.date(2020, 5, 6)


def test_now_is_stable_within_a_statement():
    ctx = ExecContext(now=dt.datetime(2021, 1, 1))
    fn = compile_expr(node("now() + INTERVAL '1 hour'"), Scope(COLUMNS), CompileEnv(ctx))
    assert fn(ROW) == dt.datetime(2021, 1, 1, 1)
    ctx.now = dt.datetime(2022, 1, 1)
    assert fn(ROW) == dt.datetime(2022, 1, 1, 1)


def test_untyped_operands_in_functions_are_checked_per_row():
    assert ev("lower(u)") == "free"
    with pytest.raises(ProgrammingError, match="does not exist"):
        ev("lower(u)", row=ROW[:-1] + (5,))
    with pytest.raises(ProgrammingError):
        ev("greatest(u, ?)", params=(1,))
    assert ev("greatest(u, ?)", params=("zz",)) == "zz"


def test_predicate_of_constants_and_untyped():
    assert pred("NULL") is False
    assert pred("1 = 1") is True
    assert pred("u = 'free'") is True
    assert pred("u = 'x'") is False
    with pytest.raises(ProgrammingError, match="WHERE must be type BOOL"):
        pred("a")


def test_in_list_of_parameters_rebuilt_per_execution():
    ctx = ExecContext(params=(1, 7, 9))
    fn = compile_expr(node("a IN (?, ?, ?)"), Scope(COLUMNS), CompileEnv(ctx))
    assert fn(ROW) is True
    ctx.params = (1, 2, 3)
    assert fn(ROW) is False
    ctx.params = (1, None, 3)
    assert fn(ROW) is None
    ctx.params = ("x", 2, 3)
    with pytest.raises(ProgrammingError):
        fn(ROW)
    fn = compile_expr(node("d IN (?, ?, ?)"), Scope(COLUMNS), CompileEnv(ExecContext(params=("2024-01-31", None, None))))
    assert fn(ROW) is True
