"""Evaluating a parsed SQL/JSON path (jsonpath_parse.py) over a JSONB tree, with PostgreSQL's rules.

``evaluate(path, tree, variables)`` yields the result items in order, depth first (each item goes
through all the remaining accessors before the next one is looked at), as PostgreSQL's executor
does: a consumer that stops early (jsonb_path_exists) or meets an error keeps the items it had.

Modes. **lax** (the default): a member accessor, filter or method other than ``.type()`` and
``.size()`` applied to an array applies to its elements (one level); a subscript applied to a
non-array treats it as a one-element array; a missing key, an accessor on the wrong kind of item
and a subscript out of range give no item. **strict** raises these as `JsonPathError` (``JSON
object does not contain key "b"``, ``jsonpath array subscript is out of bounds`` ...).

Predicates are three-valued (True, False, None for unknown). A comparison is existential over its
operands' items (lax: arrays unwrapped): true when some pair compares true; pairs of different
kinds are unknown except with null (``null == 1`` is false, ``!=`` true); arrays and objects are
never comparable; strings compare by code point. An error inside a predicate's operands makes it
unknown. A filter keeps the items whose predicate is true.

`JsonPathError` is what the ``silent`` argument and the ``@?``/``@@`` operators suppress (a
DataError otherwise); a missing variable is a plain DataError, as in PostgreSQL.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from functools import lru_cache
from typing import Any

from sqlkv.encoding.jsonb import number, sorted_object, type_name
from sqlkv.errors import DataError, NotSupportedError
from sqlkv.sql.expr.jsonpath_parse import JsonPath, Node

Item = Any  # a JSONB tree: None (JSON null), bool, int, Decimal, str, list, dict


class JsonPathError(DataError):
    """An error of the path's evaluation that ``silent`` suppresses; ``structural`` ones lax
    mode turns into "no item"."""

    def __init__(self, message: str, structural: bool = False) -> None:
        super().__init__(message)
        self.structural = structural


@dataclass
class _Context:
    root: Item
    strict: bool
    variables: dict[str, Item]


def evaluate(path: JsonPath, tree: Item, variables: dict[str, Item]) -> Iterator[Item]:
    yield from _items(path.expr, _Context(tree, path.strict, variables), None, None)


def _is_number(v: Item) -> bool:
    return isinstance(v, (int, Decimal)) and not isinstance(v, bool)


def _unwrapped(items: list[Item], cx: _Context) -> list[Item]:
    """Lax mode's automatic unwrapping of arrays in an operand sequence (one level)."""
    if cx.strict:
        return items
    out: list[Item] = []
    for v in items:
        out.extend(v if isinstance(v, list) else [v])
    return out


# ---------------------------------------------------------------- items of an expression


def _items(node: Node, cx: _Context, current: Item, last: int | None) -> Iterator[Item]:
    for item in _primary(node, cx, current, last):
        yield from _steps(node.steps, 0, item, cx, current, last)


def _steps(steps: list[Node], i: int, item: Item, cx: _Context, current: Item, last: int | None) -> Iterator[Item]:
    if i == len(steps):
        yield item
        return
    for out in _step(steps[i], item, cx, current):
        yield from _steps(steps, i + 1, out, cx, current, last)


def _primary(node: Node, cx: _Context, current: Item, last: int | None) -> list[Item]:
    kind = node.kind
    if kind == "root":
        return [cx.root]
    if kind == "current":
        return [current]
    if kind == "literal":
        return [node.value]
    if kind == "last":
        return [last]
    if kind == "var":
        if node.value not in cx.variables:
            raise DataError(f'could not find jsonpath variable "{node.value}"')
        return [cx.variables[node.value]]
    if kind == "unary":
        return [_negated(v, node.value) for v in _unwrapped(list(_items(node.args[0], cx, current, last)), cx)]
    if kind == "binary":
        return [_arithmetic(node, cx, current, last)]
    verdict = predicate(node, cx, current, last)  # a predicate as a value: true, false, null (unknown)
    return [verdict]


def _negated(v: Item, op: str) -> Item:
    if not _is_number(v):
        raise JsonPathError(f"operand of unary jsonpath operator {op} is not a numeric value")
    return -v if op == "-" else v


def _single_number(node: Node, cx: _Context, current: Item, last: int | None, what: str) -> int | Decimal:
    items = _unwrapped(list(_items(node, cx, current, last)), cx)
    if len(items) != 1 or not _is_number(items[0]):
        raise JsonPathError(f"{what} is not a single numeric value")
    return items[0]


def _arithmetic(node: Node, cx: _Context, current: Item, last: int | None) -> Item:
    op = node.value
    a = _single_number(node.args[0], cx, current, last, f"left operand of jsonpath operator {op}")
    b = _single_number(node.args[1], cx, current, last, f"right operand of jsonpath operator {op}")
    with localcontext() as ctx:
        ctx.prec = 4000
        x, y = Decimal(a), Decimal(b)
        if op in "/%" and y == 0:
            raise JsonPathError("division by zero")
        try:
            result = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                      "%": lambda: x % y, "/": lambda: _divide(x, y)}[op]()
        except ArithmeticError:  # decimal's Overflow, InvalidOperation (a quotient past the precision)
            raise JsonPathError(f"numeric value out of range in jsonpath operator {op}") from None
    return number(result)


def _weight_and_first(d: Decimal) -> tuple[int, int]:
    """PostgreSQL numeric's base-10000 weight and first base-10000 digit of d (non-zero)."""
    weight = d.copy_abs().adjusted() // 4
    return weight, int(d.copy_abs().scaleb(-4 * weight))


def _scale(d: Decimal) -> int:
    return max(0, -d.as_tuple().exponent)  # type: ignore[operator]


def _divide(x: Decimal, y: Decimal) -> Decimal:
    """PostgreSQL's numeric division: the quotient rounded to select_div_scale's scale (at least
    16 significant digits, at least either operand's scale), half away from zero."""
    if x == 0:
        rscale = max(16, _scale(x), _scale(y))
    else:
        w1, f1 = _weight_and_first(x)
        w2, f2 = _weight_and_first(y)
        qweight = w1 - w2 - (1 if f1 <= f2 else 0)
        rscale = min(max(16 - qweight * 4, _scale(x), _scale(y), 0), 1000)
    return (x / y).quantize(Decimal(1).scaleb(-rscale), rounding=ROUND_HALF_UP)


# ---------------------------------------------------------------- accessors


def _step(step: Node, item: Item, cx: _Context, current: Item) -> Iterator[Item]:
    kind = step.kind
    if kind in ("key", "wildcard", "filter") or kind == "method" and step.value not in ("type", "size"):
        if isinstance(item, list) and not cx.strict:  # lax: applied to each element
            for element in item:
                yield from _on_item(step, element, cx, current, unwrapped=True)
            return
    yield from _on_item(step, item, cx, current, unwrapped=False)


def _structural(cx: _Context, message: str) -> list[Item]:
    if cx.strict:
        raise JsonPathError(message, structural=True)
    return []


def _on_item(step: Node, item: Item, cx: _Context, current: Item, unwrapped: bool) -> Iterator[Item]:
    kind = step.kind
    if kind == "key":
        if isinstance(item, dict):
            if step.value in item:
                yield item[step.value]
            else:
                yield from _structural(cx, f'JSON object does not contain key "{step.value}"')
        else:
            yield from _structural(cx, "jsonpath member accessor can only be applied to an object")
    elif kind == "wildcard":
        if isinstance(item, dict):
            yield from item.values()
        else:
            yield from _structural(cx, "jsonpath wildcard member accessor can only be applied to an object")
    elif kind == "wildcard_array":
        if isinstance(item, list):
            yield from item
        elif not cx.strict:
            yield item
        else:
            yield from _structural(cx, "jsonpath wildcard array accessor can only be applied to an array")
    elif kind == "index":
        yield from _subscripts(step, item, cx, current)
    elif kind == "any":
        yield from _descendants(item, step.value[0], step.value[1], 0)
    elif kind == "filter":
        if predicate(step.args[0], cx, item, None) is True:
            yield item
    else:
        yield from _method(step.value, item, cx)


def _subscripts(step: Node, item: Item, cx: _Context, current: Item) -> Iterator[Item]:
    if isinstance(item, list):
        array = item
    elif not cx.strict:
        array = [item]
    else:
        yield from _structural(cx, "jsonpath array accessor can only be applied to an array")
        return
    last = len(array) - 1
    for start, end in step.args:
        low = _index(start, cx, current, last)
        high = low if end is None else _index(end, cx, current, last)
        if cx.strict and (low < 0 or low > high or high >= len(array)):
            raise JsonPathError("jsonpath array subscript is out of bounds", structural=True)
        for i in range(max(low, 0), min(high, last) + 1):
            yield array[i]


def _index(node: Node, cx: _Context, current: Item, last: int) -> int:
    items = list(_items(node, cx, current, last))
    if len(items) != 1 or not _is_number(items[0]):
        raise JsonPathError("jsonpath array subscript is not a single numeric value")
    if abs(items[0]) >= 2 ** 31:
        raise JsonPathError("jsonpath array subscript is out of integer range")
    return int(items[0])  # PostgreSQL truncates toward zero


def _descendants(item: Item, low: int, high: int | None, level: int) -> Iterator[Item]:
    """``.**{low to high}``: the item (level 0) and every item below it, pre-order."""
    if level >= low and (high is None or level <= high):
        yield item
    if high is not None and level >= high:
        return
    children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
    for child in children:
        yield from _descendants(child, low, high, level + 1)


# ---------------------------------------------------------------- item methods


_DOUBLE_MAX = Decimal(sys.float_info.max)
_DOUBLE_TEXT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def _method(name: str, item: Item, cx: _Context) -> Iterator[Item]:
    if name == "type":
        yield type_name(item)
    elif name == "size":
        if isinstance(item, list):
            yield len(item)
        elif cx.strict:
            raise JsonPathError("jsonpath item method .size() can only be applied to an array")
        else:
            yield 1
    elif name == "double":
        yield _double(item)
    elif name == "keyvalue":
        yield from _keyvalue(item, cx)
    else:
        if not _is_number(item):
            raise JsonPathError(f"jsonpath item method .{name}() can only be applied to a numeric value")
        d = Decimal(item)
        yield number(abs(d) if name == "abs" else d.to_integral_value(
            rounding="ROUND_FLOOR" if name == "floor" else "ROUND_CEILING"))


def _double(item: Item) -> Item:
    if _is_number(item):
        if abs(Decimal(item)) > _DOUBLE_MAX:
            raise JsonPathError("numeric argument of jsonpath item method .double() is out of range for type "
                                "double precision")
        return item  # PostgreSQL checks the range and keeps the number
    if isinstance(item, str):
        if not _DOUBLE_TEXT.fullmatch(item) or abs(Decimal(item.strip())) > _DOUBLE_MAX:
            raise JsonPathError("string argument of jsonpath item method .double() is not a valid representation "
                                "of a double precision number")
        return number(Decimal(format(float(item), ".15g")))  # float8_numeric: 15 significant digits
    raise JsonPathError("jsonpath item method .double() can only be applied to a string or numeric value")


def _keyvalue(item: Item, cx: _Context) -> Iterator[Item]:
    if not isinstance(item, dict):
        raise JsonPathError("jsonpath item method .keyvalue() can only be applied to an object")
    if item is not cx.root:
        raise NotSupportedError('jsonpath .keyvalue() of an object below the root is not supported (PostgreSQL '
                                'numbers its "id" by the object\'s offset in its binary form)')
    for key, value in item.items():
        yield sorted_object({"id": 0, "key": key, "value": value})


# ---------------------------------------------------------------- predicates


def predicate(node: Node, cx: _Context, current: Item, last: int | None) -> bool | None:
    kind = node.kind
    if kind in ("and", "or"):  # Kleene logic: FALSE decides AND, TRUE decides OR
        decisive = kind == "or"
        a = predicate(node.args[0], cx, current, last)
        if a is decisive:
            return decisive
        b = predicate(node.args[1], cx, current, last)
        if b is decisive:
            return decisive
        return None if None in (a, b) else not decisive
    if kind == "not":
        inner = predicate(node.args[0], cx, current, last)
        return None if inner is None else not inner
    if kind == "unknown":
        return predicate(node.args[0], cx, current, last) is None
    if kind == "exists":
        try:
            return next(iter(_items(node.args[0], cx, current, last)), _NOTHING) is not _NOTHING
        except JsonPathError:
            return None
    try:
        left = _unwrapped(list(_items(node.args[0], cx, current, last)), cx)
        right = _unwrapped(list(_items(node.args[1], cx, current, last)), cx) if len(node.args) > 1 else None
    except JsonPathError:
        return None
    if kind == "compare":
        return _existential(cx, ((a, b) for a in left for b in right), lambda a, b: _compare(node.value, a, b))
    if kind == "starts":
        return _existential(cx, ((a, b) for a in left for b in right),
                            lambda a, p: a.startswith(p) if isinstance(a, str) and isinstance(p, str) else None)
    pattern = _regex(*node.value)
    return _existential(cx, ((a, None) for a in left),
                        lambda a, _: bool(pattern.search(a)) if isinstance(a, str) else None)


_NOTHING = object()


def _existential(cx: _Context, pairs, test) -> bool | None:
    """PostgreSQL's executePredicate: lax answers true at the first true pair; strict at the
    first unknown pair answers unknown."""
    found = unknown = False
    for a, b in pairs:
        verdict = test(a, b)
        if verdict is None:
            if cx.strict:
                return None
            unknown = True
        elif verdict:
            if not cx.strict:
                return True
            found = True
    if found:
        return True
    return None if unknown else False


def _compare(op: str, a: Item, b: Item) -> bool | None:
    if a is None or b is None:
        if a is None and b is None:
            return op in ("==", "<=", ">=")
        return op == "!="
    kinds = (type_name(a), type_name(b))
    if kinds[0] != kinds[1] or kinds[0] in ("array", "object"):
        return None
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


@lru_cache(maxsize=128)
def _regex(pattern: str, flags: str) -> re.Pattern:
    """like_regex with flags i (ignore case), s (dot matches newline), m (^ $ at lines), q (literal)."""
    bad = set(flags) - set("ismq")
    if bad:
        raise NotSupportedError(f'like_regex flag "{"".join(sorted(bad))}" is not supported (i, s, m and q are)')
    bits = (re.IGNORECASE if "i" in flags else 0) | (re.DOTALL if "s" in flags else 0) | \
        (re.MULTILINE if "m" in flags else 0)
    try:
        return re.compile(re.escape(pattern) if "q" in flags else pattern, bits)
    except re.error as e:
        raise DataError(f"invalid regular expression in like_regex: {e}") from None
