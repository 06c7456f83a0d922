"""Regular expressions: ``~ ~* !~ !~*``, ``SIMILAR TO``, regexp_replace and friends.

``name ~ '^a.c$'`` (parsed as `exp.RegexpLike`; the parse step turns a binary ``~`` into RLIKE)
searches the text with Python's `re`, PostgreSQL's meaning: TRUE when the pattern matches
anywhere. Constant patterns compile once; a pattern computed per row goes through `re`'s own
cache. ``SIMILAR TO`` translates SQL's regular expression dialect (``%``, ``_``, ``|``, ``*``,
``+``, ``?``, ``{m,n}``, ``( )``, ``[ ]``; ``.`` is a literal) to a Python pattern anchored at
both ends. An invalid pattern is a DataError naming it.

Differences from PostgreSQL: Python's `re` syntax (no POSIX classes like ``[[:alpha:]]``, no
``\\m``/``\\M`` word anchors); documented in grammar-notes/statements-and-expressions.md.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

try:  # the parser behind re.compile (public names until Python 3.11 moved them)
    from re import _constants as sre_constants
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from sqlglot import exp

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled
from sqlkv.sql.types import BOOL


@lru_cache(maxsize=256)
def compile_regex(pattern: str, flags: int = 0) -> re.Pattern:
    try:
        compiled = re.compile(pattern, flags)
    except re.error as e:
        raise DataError(f"invalid regular expression {pattern!r}: {e}") from None
    if _nests_unbounded_repeats(sre_parse.parse(pattern, flags)):
        raise DataError(
            f"regular expression {pattern!r} repeats a group whose own unbounded repeat can take "
            "the next round's text, like (a+)+ or (a.*)+: Python's backtracking matcher can take exponential time on it and cannot "
            "be interrupted; use an atomic group (?>...) or a possessive quantifier (a++, a*+)")
    return compiled


_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)


def _children(op: Any, av: Any) -> list:
    """The sub-patterns of one parsed item (atomic groups and possessive repeats never
    backtrack into themselves, so they are not looked into)."""
    if op in _REPEATS:
        return [av[2]]
    if op == sre_constants.SUBPATTERN:
        return [av[3]]
    if op == sre_constants.BRANCH:
        return list(av[1])
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [av[1]]
    if op == sre_constants.GROUPREF_EXISTS:
        return [b for b in av[1:] if b is not None]
    return []


def _starts_with_unbounded_repeat(parsed: Any) -> bool:
    """Whether a match of ``parsed`` can begin inside an unbounded repeat."""
    for op, av in parsed:
        if op in _REPEATS and av[1] == sre_constants.MAXREPEAT:
            return True
        if op in (sre_constants.SUBPATTERN, sre_constants.BRANCH, *_REPEATS):
            if any(_starts_with_unbounded_repeat(sub) for sub in _children(op, av)):
                return True
            if op in _REPEATS and av[0] == 0:
                continue  # an optional item: the next one may come first
        return False
    return False


def _repeats_any_char(parsed: Any) -> bool:
    """Whether ``parsed`` holds ``.*`` / ``.+`` (an unbounded repeat of any character), which
    can swallow the text of whatever follows it -- inside a repeated group, of the next round."""
    for op, av in parsed:
        if op in _REPEATS and av[1] == sre_constants.MAXREPEAT and \
                [o for o, _ in av[2]] == [sre_constants.ANY]:
            return True
        if any(_repeats_any_char(sub) for sub in _children(op, av)):
            return True
    return False


def _nests_unbounded_repeats(parsed: Any) -> bool:
    """Whether an unbounded repeat (``*``, ``+``, ``{n,}``) repeats something that itself
    begins with one, as in (a+)+, (a*)*, (\\w+\\s*)+ -- the shape of catastrophic
    backtracking: the same text splits between the two repeats in exponentially many ways.
    Likewise a repeated group holding ``.*``, as in (a.*)+. ``(,[a-z]+)*`` is fine: each
    round starts with a comma no repeat inside can take."""
    for op, av in parsed:
        if op in _REPEATS and av[1] == sre_constants.MAXREPEAT and (
                _starts_with_unbounded_repeat(av[2]) or _repeats_any_char(av[2])):
            return True
        if any(_nests_unbounded_repeats(sub) for sub in _children(op, av)):
            return True
    return False


_SIMILAR_SPECIAL = set("|*+?{}()[]")


@lru_cache(maxsize=256)
def similar_to_regex(pattern: str) -> re.Pattern:
    """SQL's SIMILAR TO pattern as an anchored Python regular expression."""
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):  # the default escape character
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if in_class:
            out.append("\\]" if ch == "]" and out[-1] == "[" else ch)
            in_class = ch != "]" or out[-1] == "\\]"
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        elif ch == "[":
            out.append("[")
            in_class = True
        elif ch in _SIMILAR_SPECIAL:
            out.append(ch)
        else:
            out.append(re.escape(ch))
        i += 1
    return compile_regex("(?s:" + "".join(out) + r")\Z")


def _text_operands(c: Compiler, node: exp.Expression, what: str) -> tuple[Compiled, Compiled]:
    subject, pattern = c.compile(node.this), c.compile(node.expression)
    for p, role in ((subject, "string"), (pattern, "pattern")):
        if p.type.known and p.type.kind != "TEXT":
            raise ProgrammingError(f"{what} needs TEXT operands, not {p.type.sql()} ({role})")
    return subject, pattern


def _matcher(c: Compiler, node: exp.Expression, what: str, compile_pattern, full: bool) -> Compiled:
    subject, pattern = _text_operands(c, node, what)
    fs = subject.fn
    if pattern.const:
        if pattern.value is None:
            return c.derived(lambda r: None, BOOL, [subject])
        rx = compile_pattern(pattern.value)
        test = rx.match if full else rx.search

        def match_constant(r: tuple) -> object:
            s = fs(r)
            return None if s is None else test(_as_text(s, what)) is not None

        return c.derived(match_constant, BOOL, [subject, pattern])
    fp = pattern.fn

    def match_dynamic(r: tuple) -> object:
        s, p = fs(r), fp(r)
        if s is None or p is None:
            return None
        rx = compile_pattern(_as_text(p, what))
        return (rx.match if full else rx.search)(_as_text(s, what)) is not None

    return c.derived(match_dynamic, BOOL, [subject, pattern])


def _as_text(v: object, what: str) -> str:
    if not isinstance(v, str):
        raise ProgrammingError(f"{what} needs TEXT operands, not {type(v).__name__}")
    return v


@handles(exp.RegexpLike)
def _regexp_like(c: Compiler, node: exp.RegexpLike) -> Compiled:
    if node.args.get("flag") is not None:
        raise NotSupportedError("regexp_like() flags are not supported; use ~*")
    return _matcher(c, node, "~", compile_regex, full=False)


@handles(exp.RegexpILike)
def _regexp_ilike(c: Compiler, node: exp.RegexpILike) -> Compiled:
    return _matcher(c, node, "~*", lambda p: compile_regex(p, re.IGNORECASE), full=False)


@handles(exp.SimilarTo)
def _similar_to(c: Compiler, node: exp.SimilarTo) -> Compiled:
    return _matcher(c, node, "SIMILAR TO", similar_to_regex, full=True)


# ---------------------------------------------------------------- functions

_FLAGS = {"i": re.IGNORECASE, "g": 0, "c": 0, "n": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def _flags(text: str, fn: str) -> tuple[int, bool]:
    flags = 0
    for ch in text:
        if ch not in _FLAGS:
            raise DataError(f"{fn}(): invalid regular expression option: {ch!r}")
        flags |= _FLAGS[ch]
    return flags, "g" in text


regex_flags = _flags  # for the functions returning arrays (arrayfuncs.py)


def _replacement(template: str):
    """PostgreSQL's replacement text: ``\\1``..``\\9`` groups, ``\\&`` the whole match, ``\\\\`` a backslash."""
    parts: list[str | int] = []
    buf = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch == "\\" and i + 1 < len(template):
            nxt = template[i + 1]
            if nxt.isdigit() or nxt == "&":
                parts.append("".join(buf))
                buf = []
                parts.append(0 if nxt == "&" else int(nxt))
                i += 2
                continue
            if nxt == "\\":
                buf.append("\\")
                i += 2
                continue
        buf.append(ch)
        i += 1
    parts.append("".join(buf))

    def expand(m: re.Match) -> str:
        out = []
        for p in parts:
            if isinstance(p, int):
                try:
                    out.append(m.group(p) or "")
                except IndexError:
                    out.append("")
            else:
                out.append(p)
        return "".join(out)

    return expand


def regexp_replace(source: str, pattern: str, replacement: str, flags: str = "") -> str:
    """The first match replaced (every match with flag g), as PostgreSQL."""
    re_flags, every = _flags(flags, "regexp_replace")
    rx = compile_regex(pattern, re_flags)
    return rx.sub(_replacement(replacement), source, count=0 if every else 1)
