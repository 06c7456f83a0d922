"""Compiling JSONB operators and functions (issue 15); the semantics are in `jsonb_ops`.

``doc -> 'a' ->> 0`` parses to ``JSONExtractScalar(JSONExtract(doc, ('a')), JSONPath($[0]))``
(sqlkv/sql/parse_jsonb.py); `_extract` compiles each level into a closure over the operand's
closure: the key is text (an object key) or an INT (an array subscript, negative from the end),
and a missing key gives NULL.
``doc @> '{"a":1}'`` arrives as ``OPERATOR(@>)`` (sqlkv/sql/parse_jsonb.py) and resolves here when
an operand is JSONB. ``||`` and ``-`` on a JSONB operand come here from binary.py. Functions
(jsonb_set, jsonb_typeof, ...) are registered in the scalar function table.

An operand must be JSONB: a JSONB column or expression, an untyped string literal (parsed now,
so invalid JSON text is a DataError at compile time), or a parameter (a dict/list, or JSON text).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sqlkv.encoding.jsonb import Jsonb, parse, pretty, sorted_object, to_text, type_name
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.expr import jsonb_ops as ops
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled, RowFn
from sqlkv.sql.expr.operators import null_propagating
from sqlkv.sql.expr.functions import ANY, REFUSED_FUNCTIONS, register
from sqlkv.sql.expr.pg_operators import register_resolver
from sqlkv.sql.types import BOOL, INT, JSONB, TEXT, SqlType

JSONBS = frozenset({"JSONB"})
BOOLS = frozenset({"BOOL"})
TEXTS = frozenset({"TEXT"})


def is_jsonb(part: Compiled) -> bool:
    return part.type.kind == "JSONB"


def _maybe_jsonb(part: Compiled) -> bool:
    """JSONB, or an operand that may become one (untyped literal, parameter, NULL)."""
    return part.type.kind in ("JSONB", "NULL") or part.untyped_text


def jsonb_fn(part: Compiled, what: str) -> RowFn:
    """A closure giving the operand as a Jsonb (or None for SQL NULL)."""
    if is_jsonb(part):
        return part.fn
    if part.untyped_text:
        value = parse(part.value)
        return lambda r: value
    if part.type.kind != "NULL":
        raise ProgrammingError(f"{what} needs a JSONB operand, not {part.type.sql()}")
    fn = part.fn
    return lambda r: None if (v := fn(r)) is None else ops.as_doc(v, what)


def _key_fn(part: Compiled, what: str) -> RowFn:
    """An object key (TEXT) or array subscript (INT) operand."""
    if part.type.kind not in ("TEXT", "INT", "NULL"):
        raise ProgrammingError(f"{what} needs a TEXT key or an INT subscript, not {part.type.sql()}")
    fn = part.fn
    if part.type.kind != "NULL":
        return fn

    def checked(r: tuple) -> object:
        v = fn(r)
        if v is None or isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
            return v
        raise DataError(f"{what} needs a TEXT key or an INT subscript, not {type(v).__name__} {v!r}")

    return checked


def _binary(c: Compiler, parts: list[Compiled], typ: SqlType, op: Callable[[Any, Any], Any], fa: RowFn,
            fb: RowFn) -> Compiled:
    """``op(fa(r), fb(r))`` with NULL in, NULL out; folded when both operands are constant."""
    return c.derived(null_propagating(fa, fb, op), typ, parts)


# ---------------------------------------------------------------- -> ->> #> #>>


def _path_steps(path: exp.JSONPath) -> list[object]:
    """sqlglot's JSONPath (json_extract(doc, '$.a[0]'), or `-> 0`) as keys and subscripts."""
    steps: list[object] = []
    for part in path.expressions:
        if isinstance(part, exp.JSONPathRoot):
            continue
        if isinstance(part, exp.JSONPathKey) and isinstance(part.this, str):
            steps.append(part.this)
        elif isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int):
            steps.append(part.this)
        else:
            raise NotSupportedError(f"JSON path {path.sql()} is not supported: use keys and integer subscripts")
    return steps


def _field_result(text: bool) -> tuple[SqlType, Callable[[Jsonb | None], object]]:
    if text:
        return TEXT, lambda j: None if j is None else ops.text_of(j.tree)
    return JSONB, lambda j: j


def _extract(c: Compiler, node: exp.Expression, text: bool) -> Compiled:
    """json_extract(doc, '$.a[0]') (and sqlglot's other spellings of a JSON path): the value at
    the path, as JSONB (JSONExtract) or as text (JSONExtractScalar)."""
    name = "->>" if text else "->"
    if node.args.get("expressions"):
        raise NotSupportedError(f"{node.sql()[:60]}: several paths at once are not supported")
    doc = c.compile(node.this)
    what = f"{name} ({node.sql_name().lower()}())"  # the operator, or sqlglot's json_extract() call
    if not isinstance(node.expression, exp.JSONPath):
        return _field(c, name, doc, c.compile(node.expression), what)
    doc_fn = jsonb_fn(doc, what)
    typ, finish = _field_result(text)
    steps = _path_steps(node.expression)

    def by_steps(r: tuple) -> object:
        j = doc_fn(r)
        for step in steps:
            if j is None:
                break
            j = ops.field(j, step)
        return finish(j)

    return c.derived(by_steps, typ, [doc])


def _field(c: Compiler, op: str, doc: Compiled, key: Compiled, what: str | None = None) -> Compiled:
    """``doc -> key`` / ``doc ->> key`` (``what`` names it in errors: the operator by default)."""
    typ, finish = _field_result(op == "->>")
    what = what or op
    return _binary(c, [doc, key], typ, lambda j, k: finish(ops.field(j, k)), jsonb_fn(doc, what),
                   _key_fn(key, what))


def _text_array_fn(part: Compiled, what: str) -> RowFn:
    """A text[] operand (path or keys): literal text parsed now, else per row."""
    if part.const and isinstance(part.value, str):
        value = ops.parse_text_array(part.value, what)
        return lambda r: value
    fn = part.fn
    return lambda r: None if (v := fn(r)) is None else ops.text_array(v, what)


def _path(c: Compiler, op: str, doc: Compiled, path: Compiled) -> Compiled:
    """``doc #> path`` / ``doc #>> path``."""
    typ, finish = _field_result(op == "#>>")
    return _binary(c, [doc, path], typ, lambda j, p: finish(ops.at_path(j, p)), jsonb_fn(doc, op),
                   _text_array_fn(path, op))


@handles(exp.JSONExtract)
def _arrow(c: Compiler, node: exp.Expression) -> Compiled:
    return _extract(c, node, text=False)


@handles(exp.JSONExtractScalar)
def _arrow_text(c: Compiler, node: exp.Expression) -> Compiled:
    return _extract(c, node, text=True)


@handles(exp.JSONBExtract)
def _hash_arrow(c: Compiler, node: exp.Expression) -> Compiled:
    return _path(c, "#>", c.compile(node.this), c.compile(node.expression))


@handles(exp.JSONBExtractScalar)
def _hash_arrow_text(c: Compiler, node: exp.Expression) -> Compiled:
    return _path(c, "#>>", c.compile(node.this), c.compile(node.expression))


@handles(exp.JSONBContainsTopKey, exp.JSONBExists)
def _exists(c: Compiler, node: exp.Expression) -> Compiled:
    key_node = node.args.get("expression") or node.args.get("path")
    return _resolve(c, "?", c.compile(node.this), c.compile(key_node))


# ---------------------------------------------------------------- OPERATOR(...) @> <@ ? ?| ?& #-


def _key_text_fn(part: Compiled, what: str) -> RowFn:
    if part.type.kind not in ("TEXT", "NULL"):
        raise ProgrammingError(f"{what} needs a TEXT key, not {part.type.sql()}")
    return part.fn


@register_resolver
def _resolve(c: Compiler, op: str, left: Compiled, right: Compiled) -> Compiled | None:
    if op in ("@>", "<@"):
        if not (is_jsonb(left) or is_jsonb(right)) or not (_maybe_jsonb(left) and _maybe_jsonb(right)):
            return None
        a, b = jsonb_fn(left, op), jsonb_fn(right, op)
        test = ops.contains if op == "@>" else (lambda x, y: ops.contains(y, x))
        return _binary(c, [left, right], BOOL, test, a, b)
    if op not in ("?", "?|", "?&", "#-", "->", "->>", "#>", "#>>") or not _maybe_jsonb(left):
        return None
    if op in ("->", "->>"):
        return _field(c, op, left, right)
    if op in ("#>", "#>>"):
        return _path(c, op, left, right)
    doc = jsonb_fn(left, op)
    if op == "?":
        return _binary(c, [left, right], BOOL, ops.has_key, doc, _key_text_fn(right, op))
    keys = _text_array_fn(right, op)
    impl = {"?|": ops.has_any, "?&": ops.has_all, "#-": ops.delete_path}[op]
    return _binary(c, [left, right], JSONB if op == "#-" else BOOL, impl, doc, keys)


# ---------------------------------------------------------------- || and - (from binary.py)


def jsonb_binary(c: Compiler, op: str, left: Compiled, right: Compiled) -> Compiled | None:
    """``jsonb || jsonb`` and ``jsonb - key/index``; None when no operand is JSONB."""
    if not (is_jsonb(left) or is_jsonb(right)):
        return None
    if op == "||":
        if "TEXT" in (left.type.kind, right.type.kind) and not (left.untyped_text or right.untyped_text):
            return None  # text || jsonb: text concatenation with the JSON text, as PostgreSQL's
        return _binary(c, [left, right], JSONB, ops.concat, jsonb_fn(left, op), jsonb_fn(right, op))
    if op == "-" and is_jsonb(left):
        if right.untyped_text and right.value.startswith("{") and right.value.endswith("}"):
            # jsonb - text[] written as an array literal: delete each key
            return _binary(c, [left, right], JSONB, ops.delete_keys, left.fn, _text_array_fn(right, "jsonb -"))
        return _binary(c, [left, right], JSONB, ops.delete, left.fn, _key_fn(right, "jsonb -"))
    raise ProgrammingError(f"operator does not exist: {left.type.sql()} {op} {right.type.sql()}")


# ---------------------------------------------------------------- functions


def _doc(v: object) -> Jsonb:
    return ops.as_doc(v, "JSONB function")


def _build_object(*args: object) -> Jsonb:
    if len(args) % 2:
        raise DataError("jsonb_build_object() needs an even number of arguments (key, value pairs)")
    pairs: dict[str, Any] = {}
    for i in range(0, len(args), 2):
        key = args[i]
        if key is None:
            raise DataError(f"jsonb_build_object(): argument {i + 1}: key must not be null")
        pairs[key if isinstance(key, str) else to_text(ops.sql_value_tree(key))] = ops.sql_value_tree(args[i + 1])
    return Jsonb(sorted_object(pairs))


def _set(doc: object, path: object, new: object, create: bool = True) -> Jsonb:
    return ops.set_path(_doc(doc), ops.text_array(path, "jsonb_set()"), _doc(new), create)


def _insert(doc: object, path: object, new: object, after: bool = False) -> Jsonb:
    return ops.insert_path(_doc(doc), ops.text_array(path, "jsonb_insert()"), _doc(new), after)


def _extract_path(doc: object, *path: object) -> Jsonb | None:
    return ops.at_path(_doc(doc), [None if p is None else str(p) for p in path])


def _extract_path_text(doc: object, *path: object) -> str | None:
    found = _extract_path(doc, *path)
    return None if found is None else ops.text_of(found.tree)


register("jsonb_typeof json_typeof", 1, 1, lambda j: type_name(_doc(j).tree), TEXT, (JSONBS,))
register("jsonb_array_length json_array_length", 1, 1, lambda j: ops.array_length(_doc(j)), INT, (JSONBS,))
register("jsonb_strip_nulls json_strip_nulls", 1, 1, lambda j: Jsonb(ops.strip_nulls(_doc(j).tree)), JSONB,
         (JSONBS,))
register("jsonb_pretty", 1, 1, lambda j: pretty(_doc(j).tree), TEXT, (JSONBS,))
register("jsonb_set", 3, 4, _set, JSONB, (JSONBS, ANY, JSONBS, BOOLS))
register("jsonb_insert", 3, 4, _insert, JSONB, (JSONBS, ANY, JSONBS, BOOLS))
register("jsonb_extract_path json_extract_path", 1, None, _extract_path, JSONB, (JSONBS, TEXTS))
register("jsonb_extract_path_text json_extract_path_text", 1, None, _extract_path_text, TEXT, (JSONBS, TEXTS))
register("jsonb_exists", 2, 2, lambda j, k: ops.has_key(_doc(j), k), BOOL, (JSONBS, TEXTS))
register("jsonb_exists_any", 2, 2, lambda j, k: ops.has_any(_doc(j), ops.text_array(k, "jsonb_exists_any()")),
         BOOL, (JSONBS, ANY))
register("jsonb_exists_all", 2, 2, lambda j, k: ops.has_all(_doc(j), ops.text_array(k, "jsonb_exists_all()")),
         BOOL, (JSONBS, ANY))
register("jsonb_contains", 2, 2, lambda a, b: ops.contains(_doc(a), _doc(b)), BOOL, (JSONBS,))
register("to_jsonb to_json", 1, 1, lambda v: Jsonb(ops.sql_value_tree(v)), JSONB, (ANY,))
register("jsonb_build_object json_build_object", 0, None, _build_object, JSONB, (ANY,), null_ok=True)
register("jsonb_build_array json_build_array", 0, None, lambda *a: Jsonb([ops.sql_value_tree(v) for v in a]),
         JSONB, (ANY,), null_ok=True)

_SET_RETURNING = ("jsonb_each", "jsonb_each_text", "jsonb_object_keys", "jsonb_array_elements",
                  "jsonb_array_elements_text", "json_each", "json_each_text", "json_object_keys",
                  "json_array_elements", "json_array_elements_text")
for _name in _SET_RETURNING:
    REFUSED_FUNCTIONS[_name] = (f"{_name}() returns a set of rows: sqlkv accepts it in FROM only "
                                f"(SELECT * FROM t, {_name}(t.doc) AS e), not in a select list")
