"""SQL/JSON path functions and operators (issue 15), PostgreSQL's:

    jsonb_path_exists(target, path [, vars [, silent]])       BOOL: does the path yield any item
    jsonb_path_match(target, path [, vars [, silent]])        BOOL: the path's single boolean item
    jsonb_path_query_array(target, path [, vars [, silent]])  JSONB: every item, as an array
    jsonb_path_query_first(target, path [, vars [, silent]])  JSONB: the first item, or NULL
    jsonb_path_query(target, path [, vars [, silent]])        a set of JSONB rows: in FROM
                                                              (exec/jsonpath_rows.py) or a select list
    target @? path    jsonb_path_exists(target, path, '{}', true)
    target @@ path    jsonb_path_match(target, path, '{}', true)

``path`` is TEXT holding the jsonpath (jsonpath_parse.py for the subset read), ``vars`` a JSONB
object whose members are the path's ``$name`` variables, ``silent`` suppresses the evaluation
errors that `JsonPathError` marks (missing keys and wrong item kinds in strict mode, numeric
errors), giving NULL (exists, match, first), an empty array, or no more rows -- with the items
found before the error, as PostgreSQL. The operators are always silent. All are strict: a NULL
argument gives NULL (no rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlkv.encoding.jsonb import Jsonb
from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.expr import jsonb_ops as ops
from sqlkv.sql.expr.compile import Compiler
from sqlkv.sql.expr.env import Compiled
from sqlkv.sql.expr.functions import REFUSED_FUNCTIONS, register
from sqlkv.sql.expr.jsonb import BOOLS, JSONBS, TEXTS, jsonb_fn
from sqlkv.sql.expr.jsonpath_eval import JsonPathError, evaluate
from sqlkv.sql.expr.jsonpath_parse import parse_jsonpath
from sqlkv.sql.expr.pg_operators import register_resolver
from sqlkv.sql.types import BOOL, JSONB

_KINDS = (JSONBS, TEXTS, JSONBS, BOOLS)


def path_items(target: Any, path: Any, variables: Any = None, silent: bool = False,
               what: str = "jsonb_path_query()") -> Iterator[Any]:
    """The path's items over ``target`` (trees), stopping quietly at a suppressed error."""
    doc = ops.as_doc(target, what)
    if not isinstance(path, str):
        raise ProgrammingError(f"{what} needs the path as TEXT, not {type(path).__name__}")
    tree_vars = {} if variables is None else ops.as_doc(variables, what).tree
    if not isinstance(tree_vars, dict):
        raise DataError('"vars" argument is not an object')
    items = evaluate(parse_jsonpath(path), doc.tree, tree_vars)
    try:
        yield from items
    except JsonPathError:
        if not silent:
            raise


def _exists(target: Any, path: Any, variables: Any = None, silent: bool = False) -> bool | None:
    found = False
    try:
        for _item in _strict_items(target, path, variables, "jsonb_path_exists()"):
            found = True
            break
    except JsonPathError:
        if not silent:
            raise
        return None
    return found


def _strict_items(target: Any, path: Any, variables: Any, what: str) -> Iterator[Any]:
    return path_items(target, path, variables, False, what)


def _match(target: Any, path: Any, variables: Any = None, silent: bool = False) -> bool | None:
    # silent: the items found before an error count (PostgreSQL's jsonb_path_match)
    items = list(path_items(target, path, variables, silent, "jsonb_path_match()"))
    if len(items) == 1 and (items[0] is None or isinstance(items[0], bool)):
        return items[0]
    if silent:
        return None
    raise JsonPathError("single boolean result is expected")


def _query_array(target: Any, path: Any, variables: Any = None, silent: bool = False) -> Jsonb:
    return Jsonb(list(path_items(target, path, variables, silent, "jsonb_path_query_array()")))


def _query_first(target: Any, path: Any, variables: Any = None, silent: bool = False) -> Jsonb | None:
    for item in path_items(target, path, variables, silent, "jsonb_path_query_first()"):
        return Jsonb(item)
    return None


register("jsonb_path_exists", 2, 4, _exists, BOOL, _KINDS)
register("jsonb_path_match", 2, 4, _match, BOOL, _KINDS)
register("jsonb_path_query_array", 2, 4, _query_array, JSONB, _KINDS)
register("jsonb_path_query_first", 2, 4, _query_first, JSONB, _KINDS)
for _name in ("jsonb_path_exists_tz", "jsonb_path_match_tz", "jsonb_path_query_tz", "jsonb_path_query_array_tz",
              "jsonb_path_query_first_tz"):
    REFUSED_FUNCTIONS[_name] = f"{_name}() is not supported: sqlkv's jsonpath has no .datetime() to compare"
REFUSED_FUNCTIONS["jsonb_path_query"] = ("jsonb_path_query() returns a set of rows: sqlkv accepts it in FROM "
                                         "(FROM t, jsonb_path_query(t.doc, '$.a[*]') AS q) or as a select-list item, "
                                         "not inside another expression (use jsonb_path_query_array)")


@register_resolver
def _resolve(c: Compiler, op: str, left: Compiled, right: Compiled) -> Compiled | None:
    """``doc @? path`` and ``doc @@ path`` (silent: an evaluation error gives NULL)."""
    if op not in ("@?", "@@"):
        return None
    if right.type.kind not in ("TEXT", "NULL"):
        raise ProgrammingError(f"operator {op} needs a jsonpath written as TEXT on its right, not {right.type.sql()}")
    doc, path = jsonb_fn(left, op), right.fn
    test = _exists if op == "@?" else _match

    def run(r: tuple) -> bool | None:
        target, text = doc(r), path(r)
        return None if target is None or text is None else test(target, text, None, True)

    return c.derived(run, BOOL, [left, right])
