"""LIKE / ILIKE / GLOB nodes (with ESCAPE): compiled to matchers from `like`.

``name LIKE 'ab%'`` with a constant pattern and a TEXT column compiles to
``None if (s := r[i]) is None else s.startswith('ab')`` (and a TRUE-only variant for WHERE);
other constant patterns use a cached matcher; a pattern computed per row is compiled per row
through the same cache.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled
from sqlkv.sql.expr.like import glob_matcher, like_matcher, like_prefix
from sqlkv.sql.types import BOOL


def _pattern_node(node: exp.Expression) -> tuple[exp.Expression, exp.Expression | None]:
    if isinstance(node, exp.Escape):
        return node.this, node.expression
    return node, None


@handles(exp.Escape, exp.Like, exp.ILike, exp.Glob)
def _like(c: Compiler, node: exp.Expression) -> Compiled:
    match_node, escape_node = _pattern_node(node)
    if not isinstance(match_node, (exp.Like, exp.ILike, exp.Glob)):
        raise NotSupportedError(f"ESCAPE is only supported with LIKE/ILIKE: {node.sql()[:80]}")
    negated = bool(match_node.args.get("negate"))
    subject = c.compile(match_node.this)
    pattern = c.compile(match_node.expression)
    escape = c.compile(escape_node) if escape_node is not None else None
    for p, what in ((subject, "string"), (pattern, "pattern")):
        if p.type.known and p.type.kind != "TEXT":
            raise ProgrammingError(f"{_like_name(match_node)} needs TEXT operands, not {p.type.sql()} ({what})")
    if escape is not None and not escape.const:
        raise NotSupportedError("ESCAPE must be a constant")
    esc = escape.value if escape is not None else "\\"
    matcher_for = _matcher_factory(match_node, esc)
    fs = subject.fn
    if pattern.const:
        if pattern.value is None or (escape is not None and esc is None):
            return c.derived(lambda r: None, BOOL, [subject])
        return _like_constant(c, match_node, subject, matcher_for(pattern.value), pattern.value, esc, negated)
    fp = pattern.fn

    def like_dynamic(r: tuple) -> object:
        s = fs(r)
        if s is None:
            return None
        p = fp(r)
        if p is None:
            return None
        result = matcher_for(_text(p))(_text(s))
        return not result if negated else result

    return c.derived(like_dynamic, BOOL, [subject, pattern])


def _like_constant(c: Compiler, node: exp.Expression, subject: Compiled, match: Callable[[str], bool],
                   pattern: str, escape: str | None, negated: bool) -> Compiled:
    """LIKE with a constant pattern; ``col LIKE 'abc%'`` reads the row and calls startswith inline."""
    fs = subject.fn
    i = subject.column
    if subject.type.kind == "TEXT" and i is not None and not negated and isinstance(node, exp.Like):
        prefix = like_prefix(pattern, escape)
        if prefix is not None:
            fn = lambda r: None if (s := r[i]) is None else s.startswith(prefix)  # noqa: E731
            pred = lambda r: (s := r[i]) is not None and s.startswith(prefix)  # noqa: E731
            return Compiled(fn, BOOL, pred=pred)
    if subject.type.kind == "TEXT":
        if negated:
            return c.derived(lambda r: None if (s := fs(r)) is None else not match(s), BOOL, [subject])
        pred = lambda r: (s := fs(r)) is not None and match(s)  # noqa: E731
        return c.derived(lambda r: None if (s := fs(r)) is None else match(s), BOOL, [subject], pred)
    if negated:
        return c.derived(lambda r: None if (s := fs(r)) is None else not match(_text(s)), BOOL, [subject])
    return c.derived(lambda r: None if (s := fs(r)) is None else match(_text(s)), BOOL, [subject])


def _like_name(node: exp.Expression) -> str:
    return {exp.Like: "LIKE", exp.ILike: "ILIKE", exp.Glob: "GLOB"}[type(node)]


def _text(v: object) -> str:
    if isinstance(v, str):
        return v
    raise ProgrammingError(f"LIKE needs TEXT operands, not {type(v).__name__}")


def _matcher_factory(node: exp.Expression, escape: str | None) -> Callable[[str], Callable[[str], bool]]:
    if isinstance(node, exp.Glob):
        return glob_matcher
    fold = isinstance(node, exp.ILike)
    return lambda pattern: like_matcher(pattern, escape, fold)
