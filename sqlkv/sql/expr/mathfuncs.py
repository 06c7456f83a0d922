"""Numeric function implementations: arguments are non-NULL INT, FLOAT or DECIMAL values.

Results keep the argument's type where SQL does (abs, round, ceil of an INT stay INT); the
transcendental functions return FLOAT. Domain errors (sqrt(-1), ln(0)) raise DataError.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from decimal import (MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_HALF_UP, Decimal,
                     InvalidOperation, Overflow, localcontext)

from sqlkv.errors import DataError, NumericValueOutOfRange
from sqlkv.sql.types import INT_MIN, check_int_range

Number = int | float | Decimal


def absolute(x: Number) -> Number:
    if type(x) is int and x == INT_MIN:
        raise NumericValueOutOfRange("integer out of range")
    return abs(x)


def _quantized(d: Decimal, digits: int, rounding: str) -> Decimal:
    """``d`` rounded to ``digits`` places after the point (before it when negative), exactly:
    the precision needed is the number's own digits plus ``digits``, not the default 28."""
    if not d.is_finite():
        return d
    if d.adjusted() < -digits - 1:
        return Decimal(0).scaleb(min(0, -digits))  # far below the last kept place
    with localcontext() as ctx:
        ctx.prec = max(28, d.adjusted() + digits + 3)
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN
        return d.quantize(Decimal(1).scaleb(-digits), rounding)


_MAX_SCALE = 2000  # PostgreSQL's NUMERIC_MAX_RESULT_SCALE: round(x, 100000) keeps 2000 places


def _round_with(x: Number, digits: int, rounding: str) -> Number:
    digits = max(-_MAX_SCALE, min(_MAX_SCALE, digits))
    if isinstance(x, int):
        if digits >= 0:
            return x
        return check_int_range(int(_quantized(Decimal(x), digits, rounding)))
    if isinstance(x, float):
        if not math.isfinite(x):
            return x
        return float(_quantized(Decimal(repr(x)), digits, rounding))
    return _quantized(x, digits, rounding)


def round_half_away(x: Number, digits: int = 0) -> Number:
    """Round half away from zero (SQLite, and PostgreSQL for DECIMAL)."""
    return _round_with(x, digits, ROUND_HALF_UP)


def trunc(x: Number, digits: int = 0) -> Number:
    return _round_with(x, digits, ROUND_DOWN)


def ceil(x: Number) -> Number:
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return float(math.ceil(x)) if math.isfinite(x) else x
    return x.to_integral_value(ROUND_CEILING)


def floor(x: Number) -> Number:
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return float(math.floor(x)) if math.isfinite(x) else x
    return x.to_integral_value(ROUND_FLOOR)


def sign(x: Number) -> Number:
    s = (x > 0) - (x < 0)
    return type(x)(s) if not isinstance(x, int) else s


def power(x: Number, y: Number) -> Number:
    if x == 0 and y < 0:
        raise DataError("zero raised to a negative power is undefined")
    if isinstance(x, Decimal) or isinstance(y, Decimal):
        if x < 0 and Decimal(y) != Decimal(y).to_integral_value():
            raise DataError("a negative number raised to a non-integer power yields a complex result")
        try:
            return Decimal(x) ** Decimal(y)
        except (Overflow, InvalidOperation):
            raise DataError("value overflows numeric format") from None
    try:
        result = math.pow(x, y)
    except ValueError:
        raise DataError("a negative number raised to a non-integer power yields a complex result") from None
    except OverflowError:
        raise NumericValueOutOfRange("value out of range: overflow") from None
    return result


def sqrt(x: Number) -> Number:
    """The square root; of a DECIMAL a DECIMAL (28 significant digits), as PostgreSQL's numeric."""
    if x < 0:
        raise DataError("cannot take square root of a negative number")
    if isinstance(x, Decimal):
        return x.sqrt()
    return math.sqrt(x)


def cbrt(x: Number) -> float:
    f = float(x)
    return math.copysign(abs(f) ** (1 / 3), f)


def exp(x: Number) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        raise NumericValueOutOfRange("value out of range: overflow") from None


def _check_log_arg(x: Number) -> None:
    if x == 0:
        raise DataError("cannot take logarithm of zero")
    if x < 0:
        raise DataError("cannot take logarithm of a negative number")


def ln(x: Number) -> float:
    _check_log_arg(x)
    return math.log(x)


def log10(x: Number) -> float:
    _check_log_arg(x)
    return math.log10(x)


def log(base: Number, x: Number | None = None) -> float:
    """log(x) is base 10 (PostgreSQL and SQLite); log(b, x) is base b."""
    if x is None:
        return log10(base)
    _check_log_arg(base)
    _check_log_arg(x)
    if base == 1:
        raise DataError("cannot take logarithm with base 1")
    return math.log(x) / math.log(base)


def domain(fn: Callable[[float], float], name: str) -> Callable[[Number], float]:
    def checked(x: Number) -> float:
        try:
            return fn(x)
        except ValueError:
            raise DataError(f"input is out of range for {name}()") from None

    return checked


def random_float() -> float:
    return random.random()
