"""Functions on ARRAY values, with PostgreSQL's semantics, registered in the function table.

``array_length(a, 1)`` (NULL for an empty array or another dimension), ``cardinality(a)``,
``array_position(a, x [, start])`` / ``array_positions(a, x)`` (found by IS NOT DISTINCT FROM:
NULL finds a NULL element), ``array_append/prepend/cat`` (a NULL array acts as empty),
``array_remove/replace`` (IS NOT DISTINCT FROM), ``array_to_string(a, sep [, null_text])``
(NULL elements skipped unless ``null_text``), ``string_to_array(s, sep [, null_text])`` (NULL
``sep`` splits into characters), and the regular-expression functions that return arrays:
``regexp_match``, ``regexp_matches`` (scalar form: the first match; flag ``g`` needs FROM),
``regexp_split_to_array``.

sqlglot parses several of these into their own node classes (``exp.ArraySize`` ...); `_as_call`
turns those back into the plain call the function table knows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sqlkv.encoding.arrays import SqlArray
from sqlkv.errors import DataError, NotSupportedError, UndefinedFunction
from sqlkv.sql.arraycasts import array_of, as_array, element_type, is_array
from sqlkv.sql.casts import to_text
from sqlkv.sql.expr import regex
from sqlkv.sql.expr.arrays import UNKNOWN_ARRAY, element_equal
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled
from sqlkv.sql.expr.functions import ANY, INTS, TEXTS, call_shape, compile_function, register
from sqlkv.sql.types import INT, NULLTYPE, SqlType, TEXT, common_type

TEXT_ARRAY = array_of(TEXT)
INT_ARRAY = array_of(INT)


def signature(name: str, shape: str, result: SqlType | None = None) -> Callable[[list[SqlType]], SqlType]:
    """The result type of an array function, checking its static argument types.

    ``shape`` has a letter per argument: ``a`` an array, ``e`` a value of its element type, ``-``
    anything else (checked by the function table). Arrays and elements must share one element
    type (``array_append(INT[], TEXT)`` does not exist: an untyped literal is not coerced here,
    write ``5`` or ``'5'::INT``). ``result`` None means the arrays' type.
    """
    def result_type(types: list[SqlType]) -> SqlType:
        elem = NULLTYPE
        for letter, t in zip(shape, types):
            if letter == "-" or not t.known:
                continue
            if (letter == "a") != is_array(t):
                raise _no_such_function(name, types)
            common = common_type(elem, element_type(t) if letter == "a" else t)
            if common is None:
                raise _no_such_function(name, types)
            elem = common
        return result if result is not None else SqlType("ARRAY", element=elem)

    return result_type


def _no_such_function(name: str, types: list[SqlType]) -> UndefinedFunction:
    shown = ", ".join(t.sql() if t.known else "unknown" for t in types)
    return UndefinedFunction(f"function {name}({shown}) does not exist")


def _not_distinct(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return element_equal(a, b)


def array_length(a: Any, dim: int) -> int | None:
    a = as_array(a, "array_length() argument 1")
    return len(a) if dim == 1 and len(a) else None


def cardinality(a: Any) -> int:
    return len(as_array(a, "cardinality() argument"))


def array_lower(a: Any, dim: int) -> int | None:
    return 1 if dim == 1 and len(as_array(a, "array_lower() argument 1")) else None


def array_upper(a: Any, dim: int) -> int | None:
    return array_length(a, dim)


def array_ndims(a: Any) -> int | None:
    return 1 if len(as_array(a, "array_ndims() argument")) else None


def array_dims(a: Any) -> str | None:
    n = len(as_array(a, "array_dims() argument"))
    return f"[1:{n}]" if n else None


def array_fill(value: object, lengths: Any, lower: Any = None) -> SqlArray:
    dims = as_array(lengths, "array_fill() argument 2").items
    if len(dims) != 1 or dims[0] is None:
        raise NotSupportedError("array_fill(): sqlkv arrays have one dimension: give ARRAY[n]")
    if lower is not None and as_array(lower, "array_fill() argument 3").items not in ((1,),):
        raise NotSupportedError("array_fill(): sqlkv arrays start at 1")
    if not isinstance(dims[0], int) or dims[0] < 0 or dims[0] > 10_000_000:
        raise DataError(f"array_fill(): invalid length {dims[0]!r}")
    return SqlArray([value] * dims[0])


def trim_array(a: Any, n: int) -> SqlArray:
    items = as_array(a, "trim_array() argument 1").items
    if not 0 <= n <= len(items):
        raise DataError(f"number of elements to trim must be between 0 and {len(items)}")
    return SqlArray(items[:len(items) - n])


def array_position(a: Any, x: object, start: int | None = 1) -> int | None:
    if a is None:
        return None
    items = as_array(a, "array_position() argument 1").items
    if start is None:
        raise DataError("array_position(): initial position must not be null")
    for i in range(max(start, 1) - 1, len(items)):
        if _not_distinct(items[i], x):
            return i + 1
    return None


def array_positions(a: Any, x: object) -> SqlArray | None:
    if a is None:
        return None
    return SqlArray(i for i, v in enumerate(as_array(a, "array_positions() argument 1").items, 1)
                    if _not_distinct(v, x))


def array_append(a: Any, x: object) -> SqlArray:
    return SqlArray((as_array(a).items if a is not None else ()) + (x,))


def array_prepend(x: object, a: Any) -> SqlArray:
    return SqlArray((x,) + (as_array(a).items if a is not None else ()))


def array_cat(a: Any, b: Any) -> SqlArray | None:
    if a is None and b is None:
        return None
    return SqlArray((as_array(a).items if a is not None else ()) + (as_array(b).items if b is not None else ()))


def array_remove(a: Any, x: object) -> SqlArray | None:
    if a is None:
        return None
    return SqlArray(v for v in as_array(a, "array_remove() argument 1") if not _not_distinct(v, x))


def array_replace(a: Any, old: object, new: object) -> SqlArray | None:
    if a is None:
        return None
    return SqlArray(new if _not_distinct(v, old) else v for v in as_array(a, "array_replace() argument 1"))


def element_text(v: object) -> str:
    """An element as array_to_string writes it (booleans as t/f, as PostgreSQL's output)."""
    return ("t" if v else "f") if isinstance(v, bool) else to_text(v)


def array_to_string(a: Any, sep: str | None, null_text: str | None = None) -> str | None:
    if a is None or sep is None:
        return None
    parts = [element_text(v) if v is not None else null_text
             for v in as_array(a, "array_to_string() argument 1")]
    return sep.join(p for p in parts if p is not None)


def string_to_array(s: str | None, sep: str | None, null_text: str | None = None) -> SqlArray | None:
    if s is None:
        return None
    if s == "":
        return SqlArray()
    if sep is None:
        parts = list(s)
    elif sep == "":
        parts = [s]
    else:
        parts = s.split(sep)
    return SqlArray(None if null_text is not None and p == null_text else p for p in parts)


# -- regular expressions returning arrays


def regexp_match(source: str, pattern: str, flags: str = "") -> SqlArray | None:
    """The first match: its capture groups (or the whole match when there are none); NULL if none."""
    re_flags, every = regex.regex_flags(flags, "regexp_match")
    if every:
        raise DataError("regexp_match() does not support the \"global\" option (use regexp_matches in FROM)")
    m = regex.compile_regex(pattern, re_flags).search(source)
    if m is None:
        return None
    return SqlArray(m.groups()) if m.re.groups else SqlArray([m.group(0)])


def regexp_matches_scalar(source: str, pattern: str, flags: str = "") -> SqlArray | None:
    if "g" in flags:
        raise NotSupportedError("regexp_matches(..., 'g') returns a set of rows: sqlkv accepts it in FROM "
                                "(SELECT m FROM regexp_matches(s, p, 'g') AS m), not in an expression")
    return regexp_match(source, pattern, flags)


def regexp_matches_rows(source: str, pattern: str, flags: str = "") -> SqlArray:
    """regexp_matches in FROM: one TEXT[] per match (every match with flag g, else the first)."""
    re_flags, every = regex.regex_flags(flags, "regexp_matches")
    rx = regex.compile_regex(pattern, re_flags)
    matches = rx.finditer(source) if every else filter(None, [rx.search(source)])
    return SqlArray(SqlArray(m.groups()) if m.re.groups else SqlArray([m.group(0)]) for m in matches)


def regexp_split_to_array(source: str, pattern: str, flags: str = "") -> SqlArray:
    return SqlArray(regexp_split(source, pattern, flags, "regexp_split_to_array"))


def regexp_split(source: str, pattern: str, flags: str, name: str) -> list[str]:
    """PostgreSQL's split: empty matches split between characters, never at the ends."""
    re_flags, every = regex.regex_flags(flags, name)
    if every:
        raise DataError(f'{name}() does not support the "global" option')
    rx = regex.compile_regex(pattern, re_flags)
    out: list[str] = []
    start, previous_end = 0, None
    for m in rx.finditer(source):
        if m.start() == m.end() and (m.start() in (0, len(source)) or m.start() == previous_end):
            continue  # an empty match at either end, or right after a match, splits nothing
        out.append(source[start:m.start()])
        start = previous_end = m.end()
    out.append(source[start:])
    return out


register("array_length", 2, 2, array_length, signature("array_length", "a-", INT), (ANY, INTS))
register("array_lower", 2, 2, array_lower, signature("array_lower", "a-", INT), (ANY, INTS))
register("array_upper", 2, 2, array_upper, signature("array_upper", "a-", INT), (ANY, INTS))
register("array_ndims", 1, 1, array_ndims, signature("array_ndims", "a", INT), (ANY,))
register("array_dims", 1, 1, array_dims, signature("array_dims", "a", TEXT), (ANY,))
register("array_fill", 2, 3, array_fill, lambda types: array_of(types[0]) if types[0].known else UNKNOWN_ARRAY,
         (ANY,), null_ok=True)
register("trim_array", 2, 2, trim_array, signature("trim_array", "a-"), (ANY, INTS))
register("cardinality", 1, 1, cardinality, signature("cardinality", "a", INT), (ANY,))
register("array_position", 2, 3, array_position, signature("array_position", "ae-", INT), (ANY, ANY, INTS),
         null_ok=True)
register("array_positions", 2, 2, array_positions, signature("array_positions", "ae", INT_ARRAY), (ANY,),
         null_ok=True)
register("array_append", 2, 2, array_append, signature("array_append", "ae"), (ANY,), null_ok=True)
register("array_prepend", 2, 2, array_prepend, signature("array_prepend", "ea"), (ANY,), null_ok=True)
register("array_cat", 2, 2, array_cat, signature("array_cat", "aa"), (ANY,), null_ok=True)
register("array_remove", 2, 2, array_remove, signature("array_remove", "ae"), (ANY,), null_ok=True)
register("array_replace", 3, 3, array_replace, signature("array_replace", "aee"), (ANY,), null_ok=True)
register("array_to_string", 2, 3, array_to_string, signature("array_to_string", "a--", TEXT),
         (ANY, TEXTS, TEXTS), null_ok=True)
register("string_to_array", 2, 3, string_to_array, TEXT_ARRAY, (TEXTS,), null_ok=True)
register("regexp_match", 2, 3, regexp_match, TEXT_ARRAY, (TEXTS,))
register("regexp_matches", 2, 3, regexp_matches_scalar, TEXT_ARRAY, (TEXTS,))
register("regexp_split_to_array", 2, 3, regexp_split_to_array, TEXT_ARRAY, (TEXTS,))

# sqlglot's own node classes for some of them (arguments in the order the user wrote them)
_NODE_NAMES = {
    exp.ArraySize: "array_length", exp.ArrayPosition: "array_position", exp.ArrayConcat: "array_cat",
    exp.ArrayAppend: "array_append", exp.ArrayPrepend: "array_prepend", exp.ArrayRemove: "array_remove",
    exp.ArrayToString: "array_to_string", exp.StringToArray: "string_to_array",
}


@handles(*_NODE_NAMES)
def _as_call(c: Compiler, node: exp.Func) -> Compiled:
    _name, args = call_shape(node)
    return compile_function(c, exp.Anonymous(this=_NODE_NAMES[type(node)], expressions=[a.copy() for a in args]))
