"""ARRAY expressions: constructors, subscripts and slices, operators, quantified comparisons.

``SELECT tags[2], tags[1:2] FROM t WHERE tags @> ARRAY['x'] AND 'y' = ANY(tags)``: `ARRAY[...]`
builds a `SqlArray` whose elements are unified to one type; ``tags[2]`` is 1-based and NULL out
of range; ``tags[1:2]`` is a slice clamped to the array (empty when nothing is left);
``@>``/``<@``/``&&`` compare elements with ``=`` (a NULL element matches nothing); ``x = ANY(a)``
and ``x <> ALL(a)`` follow SQL's three-valued logic over the elements. Functions on arrays are
in `sqlkv.sql.expr.arrayfuncs`.

Dispatch with other structured types: the parser spells ``@>`` and ``<@`` as ``OPERATOR(@>)``
(sqlkv/sql/parse_jsonb.py), resolved by operand type (sqlkv/sql/expr/pg_operators.py): JSONB
operands are JSONB's (sqlkv/sql/expr/jsonb.py), any others the array operators here. ``||`` is
array concatenation when an operand is an ARRAY, else JSONB's or string concatenation (binary.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlglot import exp

from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.arraycasts import array_of, as_array, element_type, is_array
from sqlkv.sql.casts import cast
from sqlkv.sql.expr.compile import COMPARISON_HOOKS, Compiler, handles
from sqlkv.sql.expr.env import Compiled, RowFn, constant
from sqlkv.sql.expr.pg_operators import register_resolver
from sqlkv.sql.expr.subquery import compile_array_subquery
from sqlkv.sql.expr.operators import (
    COMPARE_OPS, generic_compare, null_propagating, operator_error, to_timestamp, unify,
)
from sqlkv.sql.types import BOOL, INT, NULLTYPE, SqlType, common_type

UNKNOWN_ARRAY = SqlType("ARRAY", element=NULLTYPE)

def array_part(part: Compiled, other: SqlType | None = None, what: str = "operand") -> Compiled:
    """An operand that must be an array: an untyped ``'{1,2}'`` literal takes ``other``'s array
    type; a parameter is checked per row; any other type is an error."""
    if is_array(part.type):
        return part
    if part.untyped_text and part.const:
        target = other if other is not None and is_array(other) else array_of(SqlType("TEXT"))
        return constant(cast(part.value, target), target)
    if not part.type.known:
        fn = part.fn
        return Compiled(lambda r: None if (v := fn(r)) is None else as_array(v, what), UNKNOWN_ARRAY)
    raise ProgrammingError(f"{what} must be an array, not type {part.type.sql()}")


# ---------------------------------------------------------------- ARRAY[...]


@handles(exp.Array)
def _array_constructor(c: Compiler, node: exp.Array) -> Compiled:
    if len(node.expressions) == 1 and isinstance(node.expressions[0], (exp.Select, exp.Subquery, exp.Union,
                                                                       exp.Values)):
        return compile_array_subquery(c, node.expressions[0], array_of, _flat_values)
    if any(isinstance(e, (exp.Select, exp.Subquery)) for e in node.expressions):
        raise NotSupportedError("ARRAY(SELECT ...) takes exactly one subquery")
    parts = [c.compile(e) for e in node.expressions]
    if any(is_array(p.type) or isinstance(p.value, SqlArray) for p in parts):
        raise NotSupportedError("multi-dimensional arrays are not supported: ARRAY[ARRAY[...]]")
    seen = NULLTYPE
    for p in parts:
        if p.type.known and not p.untyped_text:
            if common_type(seen, p.type) is None:  # PostgreSQL's wording
                raise ProgrammingError(f"ARRAY types {seen.sql()} and {p.type.sql()} cannot be matched")
            seen = common_type(seen, p.type)  # type: ignore[assignment]
    fns, elem = unify(parts, "ARRAY", for_compare=False) if parts else ([], NULLTYPE)
    if any(not p.type.known and not p.const for p in parts):  # a parameter could hold an array
        return c.derived(lambda r: _flat(SqlArray(f(r) for f in fns)), array_of(elem), parts)
    return c.derived(lambda r: SqlArray(f(r) for f in fns), array_of(elem), parts)


def _flat_values(values: Iterable) -> SqlArray:
    return _flat(SqlArray(values))


def _flat(value: SqlArray) -> SqlArray:
    if any(isinstance(v, SqlArray) for v in value.items):
        raise NotSupportedError("multi-dimensional arrays are not supported: ARRAY[<an array>]")
    return value


# ---------------------------------------------------------------- subscripts and slices


@handles(exp.Bracket)
def _subscript(c: Compiler, node: exp.Bracket) -> Compiled:
    if len(node.expressions) != 1:
        raise NotSupportedError(f"multi-dimensional subscripts are not supported: {node.sql()[:60]}")
    base = c.compile(node.this)
    if base.type.known and not is_array(base.type):
        raise ProgrammingError(f"cannot subscript type {base.type.sql()} because it is not an array")
    arr = array_part(base)
    index = node.expressions[0]
    if isinstance(index, exp.Slice):
        return _slice(c, arr, index)
    i = _int_part(c, c.compile(index), "array subscript")
    fa, fi = arr.fn, i.fn

    def element(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        k = fi(r)
        if k is None or not 1 <= k <= len(a):
            return None
        return a.items[k - 1]

    return c.derived(element, element_type(arr.type), [arr, i])


def _int_part(c: Compiler, part: Compiled, what: str) -> Compiled:
    if part.type.kind in ("INT", "NULL"):
        return part
    if part.untyped_text:
        return constant(cast(part.value, INT), INT)
    raise ProgrammingError(f"{what} must be type INT, not type {part.type.sql()}")


def _slice(c: Compiler, arr: Compiled, node: exp.Slice) -> Compiled:
    lo = _int_part(c, c.compile(node.this), "array slice bound") if node.this is not None else constant(1, INT)
    hi_node = node.expression
    hi = _int_part(c, c.compile(hi_node), "array slice bound") if hi_node is not None else None
    fa, flo = arr.fn, lo.fn
    fhi = hi.fn if hi is not None else None

    def sliced(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        start = flo(r)
        stop = len(a) if fhi is None else fhi(r)
        if start is None or stop is None:
            return None
        start = max(start, 1)
        stop = min(stop, len(a))
        return SqlArray(a.items[start - 1:stop]) if start <= stop else SqlArray()

    return c.derived(sliced, arr.type, [arr, lo] + ([hi] if hi is not None else []))


# ---------------------------------------------------------------- element comparison


def element_equal(a: object, b: object) -> bool:
    """``a = b`` for two non-NULL elements (numbers across kinds, dates against timestamps)."""
    if type(a) is type(b):
        return a == b
    return generic_compare("=", to_timestamp(a), to_timestamp(b))


def _array_operands(left: Compiled, right: Compiled, what: str) -> tuple[Compiled, Compiled]:
    left = array_part(left, right.type, f"left operand of {what}")
    right = array_part(right, left.type, f"right operand of {what}")
    if element_type(left.type).known and element_type(right.type).known:
        if common_type(element_type(left.type), element_type(right.type)) is None:
            raise operator_error(what, left.type.sql(), right.type.sql())
    return left, right


def contains(a: SqlArray, b: SqlArray) -> bool:
    """``a @> b``: every element of b equals some element of a (a NULL element never matches)."""
    return all(x is not None and any(y is not None and element_equal(x, y) for y in a.items) for x in b.items)


def overlaps(a: SqlArray, b: SqlArray) -> bool:
    """``a && b``: some non-NULL element in both."""
    return any(x is not None and any(y is not None and element_equal(x, y) for y in b.items) for x in a.items)


def _binary_array_op(c: Compiler, left: Compiled, right: Compiled, what: str,
                     op: Callable[[SqlArray, SqlArray], bool]) -> Compiled:
    left, right = _array_operands(left, right, what)
    return c.derived(null_propagating(left.fn, right.fn, op), BOOL, [left, right])


_CONTAINMENT = {"@>": contains, "<@": lambda a, b: contains(b, a)}


@register_resolver
def _containment(c: Compiler, op: str, left: Compiled, right: Compiled) -> Compiled | None:
    """``a OPERATOR(@>) b`` / ``<@`` (the parser's spelling, sqlkv/sql/parse_jsonb.py) when no
    operand is JSONB: the array operators (JSONB's resolver answers for its own operands)."""
    test = _CONTAINMENT.get(op)
    if test is None or "JSONB" in (left.type.kind, right.type.kind):
        return None
    return _binary_array_op(c, left, right, op, test)


@handles(exp.ArrayContainsAll)
def _contains_op(c: Compiler, node: exp.ArrayContainsAll) -> Compiled:
    return _binary_array_op(c, c.compile(node.this), c.compile(node.expression), "@>", contains)


@handles(exp.ArrayContainedBy)
def _contained_op(c: Compiler, node: exp.ArrayContainedBy) -> Compiled:
    return _binary_array_op(c, c.compile(node.this), c.compile(node.expression), "<@", _CONTAINMENT["<@"])


@handles(exp.ArrayOverlaps)
def _overlaps_op(c: Compiler, node: exp.ArrayOverlaps) -> Compiled:
    return _binary_array_op(c, c.compile(node.this), c.compile(node.expression), "&&", overlaps)


# ---------------------------------------------------------------- ||


def array_concat(left: Compiled, right: Compiled) -> tuple[RowFn, SqlType]:
    """``||`` with an ARRAY operand: array || array, array || element, element || array.

    NULL arrays act as empty arrays (a NULL element is appended as NULL), as PostgreSQL does."""
    if is_array(left.type) and is_array(right.type) or any(
            _untyped(p) for p in (left, right)):  # '{2}' and NULL are arrays here, as in PostgreSQL
        left = array_part(left, right.type)  # type: ignore[arg-type]
        right = array_part(right, left.type)  # type: ignore[arg-type]
        typ = _concat_type(left.type, right.type)
        fa, fb = left.fn, right.fn

        def cat(r: tuple) -> object:
            a, b = fa(r), fb(r)
            if a is None and b is None:
                return None
            return SqlArray((a.items if a is not None else ()) + (b.items if b is not None else ()))

        return cat, typ
    if is_array(left.type):
        return _with_element(left, right, append=True)
    return _with_element(right, left, append=False)


def _untyped(p: Compiled) -> bool:
    return p.const and (p.untyped_text or (p.value is None and not p.type.known))


def _concat_type(a: SqlType, b: SqlType) -> SqlType:
    elem = common_type(element_type(a), element_type(b))
    if elem is None:
        raise operator_error("||", a.sql(), b.sql())
    return array_of(elem)


def _with_element(arr: Compiled, elem: Compiled, append: bool) -> tuple[RowFn, SqlType]:
    et = element_type(arr.type)
    fns, target = unify([constant(None, et), elem], "||", for_compare=False)
    fe = fns[1]
    fa = arr.fn
    typ = array_of(target) if target.known else arr.type

    def add(r: tuple) -> object:
        a = fa(r)
        items = a.items if a is not None else ()
        v = fe(r)
        return SqlArray(items + (v,) if append else (v,) + items)

    return add, typ


# ---------------------------------------------------------------- x op ANY/ALL (array)


def array_quantifier(node: exp.Expression) -> tuple[exp.Expression, bool] | None:
    """(array operand, is_all) when ``node`` is ANY/SOME/ALL over an array rather than a subquery."""
    if isinstance(node, (exp.Any, exp.All)):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, (exp.Select, exp.Subquery, exp.Union, exp.Intersect, exp.Except)):
            return None
        return inner, isinstance(node, exp.All)
    if isinstance(node, exp.Anonymous) and node.name.upper() in ("ALL", "SOME", "ANY"):
        if len(node.expressions) != 1:
            raise ProgrammingError(f"{node.name.upper()}() takes one array or subquery")
        inner = node.expressions[0]
        if isinstance(inner, (exp.Select, exp.Subquery)):
            return None
        return inner, node.name.upper() == "ALL"
    return None


def _quantified_hook(c: Compiler, node: exp.Binary, op_name: str) -> Compiled | None:
    quantified = array_quantifier(node.expression)
    return None if quantified is None else compile_array_quantified(c, node, op_name, *quantified)


COMPARISON_HOOKS.append(_quantified_hook)


def compile_array_quantified(c: Compiler, node: exp.Binary, op_name: str, operand: exp.Expression,
                             is_all: bool) -> Compiled:
    """``x op ANY(a)`` / ``x op ALL(a)``: TRUE/FALSE as soon as decided, NULL when only NULL
    comparisons are left undecided; ALL over an empty array is TRUE, ANY over one is FALSE."""
    left = c.compile(node.this)
    arr = c.compile(operand)
    if left.type.known and not left.untyped_text:
        arr = array_part(arr, array_of(left.type), f"the operand of {op_name} {'ALL' if is_all else 'ANY'}")
    else:
        arr = array_part(arr, None, f"the operand of {op_name} {'ALL' if is_all else 'ANY'}")
    elem = element_type(arr.type)
    fv = unify([left, constant(None, elem)], op_name)[0][0] if elem.known else left.fn
    fa = arr.fn
    cmp = COMPARE_OPS[op_name]

    def quantified(r: tuple) -> object:
        a = fa(r)
        if a is None:
            return None
        if not a.items:
            return is_all
        v = fv(r)
        if v is None:
            return None
        saw_null = False
        for w in a.items:
            if w is None:
                saw_null = True
                continue
            x, y = to_timestamp(v), to_timestamp(w)
            result = cmp(x, y) if type(x) is type(y) else generic_compare(op_name, x, y)
            if result != is_all:
                return result
        return None if saw_null else is_all

    return c.derived(quantified, BOOL, [left, arr])



@handles(exp.Unnest)
def _unnest_in_expression(c: Compiler, node: exp.Unnest) -> Compiled:
    raise NotSupportedError("unnest() returns a set of rows: sqlkv accepts it in FROM only "
                            "(SELECT x FROM t, unnest(t.a) AS x), not in an expression")
