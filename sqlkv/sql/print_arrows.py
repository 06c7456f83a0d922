"""Printing PostgreSQL's JSONB arrows as written: ``doc -> 'k'``, ``doc ->> 0``, ``doc #> '{a,b}'``.

sqlglot parses ``->``, ``->>``, ``#>`` and ``#>>`` into JSONExtract, JSONExtractScalar,
JSONBExtract and JSONBExtractScalar nodes and prints them as function calls
(``JSON_EXTRACT(((doc)), ('k'))``), which is what SHOW CREATE TABLE, SHOW CREATE VIEW and
EXPLAIN showed, with the parentheses parse_jsonb.py's `arrow_edits` add around operands. The
printers installed here (into sqlglot's default generator, when parse_jsonb.py loads) write the
operator instead, in a form that reads back to the same tree and prints again to the same text:

- the left operand loses every pair of parentheses the parse added (``((doc))`` is ``doc``) and
  keeps one pair only when it is not an atom (``(a || b) -> 'k'``): the arrows bind tighter
  than every other operator, and ``a -> 'x' -> 'y'`` groups from the left;
- a key in parentheses (``('k')``: `arrow_edits` wraps a string after ``->`` so that it is a
  key, not a JSON path) is printed bare, and wrapped again when read back; sqlglot's JSON path
  of one subscript or one key (``doc -> 0``) is printed as the integer or quoted key;
- anything else a function-call spelling can hold (a JSON path of several steps) keeps sqlglot's
  function spelling.

Old stored texts in the function spelling read back into the same trees, so they print (and
match query expressions, for expression indexes) like new ones.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.generator import Generator

ARROWS: dict[type[exp.Expression], str] = {exp.JSONExtract: "->", exp.JSONExtractScalar: "->>",
                                           exp.JSONBExtract: "#>", exp.JSONBExtractScalar: "#>>"}
_ATOMS = (exp.Column, exp.Literal, exp.Func, exp.Placeholder, exp.Parameter, exp.Cast, exp.Null, exp.Boolean)
_FUNCTION_SPELLING: dict[type[exp.Expression], Callable] = {}


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _operand(gen: Generator, node: exp.Expression, right: bool = False) -> str:
    """An operand of an arrow: bare when it is an atom (on the left also another arrow: they
    group from the left), else in one pair."""
    inner = _unparen(node)
    text = gen.sql(inner)
    bare = isinstance(inner, _ATOMS) and not (right and type(inner) in ARROWS)
    return text if bare else f"({text})"


def _key(gen: Generator, node: exp.Expression, arrow: str) -> str | None:
    """The right operand as written after the arrow (None: not expressible as one)."""
    if isinstance(node, exp.JSONPath):
        steps = node.expressions
        if len(steps) != 2 or not isinstance(steps[0], exp.JSONPathRoot) or arrow not in ("->", "->>"):
            return None
        step = steps[1]
        if isinstance(step, exp.JSONPathSubscript) and type(step.this) is int:
            return str(step.this)
        if isinstance(step, exp.JSONPathKey) and isinstance(step.this, str):
            return gen.sql(exp.Literal.string(step.this))
        return None
    inner = _unparen(node)
    if isinstance(inner, exp.Literal) and inner.is_string and arrow in ("->", "->>") and inner is node:
        return None  # a bare string after -> is a JSON path to sqlglot: only its function spelling says so
    if isinstance(inner, exp.Neg) and isinstance(inner.this, exp.Literal):
        return gen.sql(inner)  # doc -> -1
    return _operand(gen, node, right=True)


def _arrow_sql(gen: Generator, node: exp.Expression) -> str:
    arrow = ARROWS[type(node)]
    key = _key(gen, node.expression, arrow)
    if key is None:
        return _FUNCTION_SPELLING[type(node)](gen, node)
    text = f"{_operand(gen, node.this)} {arrow} {key}"
    # a subscript or field access after an arrow would bind to its key: keep the arrow whole
    return f"({text})" if isinstance(node.parent, (exp.Bracket, exp.Dot)) and node.parent.this is node else text


def _function_spelling(cls: type[exp.Expression]) -> Callable:
    transform = Generator.TRANSFORMS.get(cls)
    if transform is not None:
        return transform
    method = f"{cls.key}_sql"  # the generator's own method, as Generator.sql dispatches
    if hasattr(Generator, method):
        return lambda gen, node: getattr(gen, method)(node)
    return lambda gen, node: gen.function_fallback_sql(node)


def install() -> None:
    """Print the four arrows as operators (idempotent)."""
    for cls in ARROWS:
        if Generator.TRANSFORMS.get(cls) is not _arrow_sql:
            _FUNCTION_SPELLING[cls] = _function_spelling(cls)
            Generator.TRANSFORMS[cls] = _arrow_sql
