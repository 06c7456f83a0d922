"""LIKE, ILIKE and GLOB patterns, compiled once into a matcher.

``name LIKE 'ab%'`` with a constant pattern becomes ``str.startswith('ab')``; ``'%ab%'`` becomes a
substring test; anything else a compiled, anchored regular expression (cached per pattern).
LIKE is case-sensitive (PostgreSQL/CockroachDB; SQLite folds ASCII case), ILIKE folds case,
GLOB uses ``*``, ``?`` and ``[...]`` and is case-sensitive.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from sqlkv.errors import DataError

Matcher = Callable[[str], bool]


def _like_parts(pattern: str, escape: str | None) -> list[tuple[str, str]]:
    """The pattern as ('lit', text) / ('any', '') / ('one', '') pieces."""
    if escape is not None and len(escape) != 1:
        raise DataError("invalid escape string: ESCAPE must be a single character")
    parts: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= len(pattern):
                raise DataError("LIKE pattern must not end with escape character")
            parts.append(("lit", pattern[i + 1]))
            i += 2
            continue
        if ch == "%":
            parts.append(("any", ""))
        elif ch == "_":
            parts.append(("one", ""))
        else:
            parts.append(("lit", ch))
        i += 1
    return parts


def like_prefix(pattern: str, escape: str | None = "\\") -> str | None:
    """The literal prefix when the LIKE pattern is exactly ``'<literal>%'``, else None."""
    parts = _like_parts(pattern, escape)
    if not parts or parts[-1][0] != "any" or any(k != "lit" for k, _ in parts[:-1]):
        return None
    return "".join(t for _, t in parts[:-1])


@lru_cache(maxsize=512)
def like_matcher(pattern: str, escape: str | None = "\\", fold_case: bool = False) -> Matcher:
    """A function testing whether a string matches the LIKE pattern."""
    parts = _like_parts(pattern, escape)
    kinds = [k for k, _ in parts]
    literal = "".join(t for _, t in parts)
    if fold_case:
        literal = literal.lower()
    if "one" not in kinds and not fold_case:
        n_any = kinds.count("any")
        if n_any == 0:
            return lambda s: s == literal
        if n_any == 1 and kinds[-1] == "any":
            return lambda s: s.startswith(literal)
        if n_any == 1 and kinds[0] == "any":
            return lambda s: s.endswith(literal)
        if n_any == 2 and kinds[0] == kinds[-1] == "any":
            return lambda s: literal in s
    regex = "".join(
        ".*" if k == "any" else "." if k == "one" else re.escape(t) for k, t in parts
    )
    compiled = re.compile(regex, re.DOTALL | (re.IGNORECASE if fold_case else 0))
    full = compiled.fullmatch
    return lambda s: full(s) is not None


def _glob_class(pattern: str, i: int) -> tuple[str, int] | None:
    """The regex for the ``[...]`` set starting at ``pattern[i]`` and the index after it.

    SQLite's rules (patternCompare): ``^`` first negates, a ``]`` first is a member, ``a-z`` is
    a range whose low end is also a member by itself (so a reversed range matches just that
    character), ``-`` first, last or right after a range is literal. None when unclosed.
    """
    j = i + 1
    negate = j < len(pattern) and pattern[j] == "^"
    if negate:
        j += 1
    members: list[str] = []
    prior: str | None = None  # the member before a '-' (None: a '-' here is literal)
    if j < len(pattern) and pattern[j] == "]":
        members.append(re.escape("]"))  # a leading ``]`` is a member, never a range's low end
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        ch = pattern[j]
        if ch == "-" and prior is not None and j + 1 < len(pattern) and pattern[j + 1] != "]":
            high = pattern[j + 1]
            if prior <= high:
                members.append(f"{re.escape(prior)}-{re.escape(high)}")
            prior = None
            j += 2
        else:
            members.append(re.escape(ch))
            prior = ch
            j += 1
    if j >= len(pattern):
        return None
    body = "".join(members)
    if not body:
        return ("[^\\s\\S]" if not negate else "[\\s\\S]"), j + 1
    return f"[{'^' if negate else ''}{body}]", j + 1


@lru_cache(maxsize=512)
def glob_matcher(pattern: str) -> Matcher:
    """SQLite's GLOB: ``*`` any run, ``?`` one character, ``[...]`` sets; case-sensitive."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            cls = _glob_class(pattern, i)
            if cls is None:  # an unclosed set: SQLite's GLOB matches nothing
                return lambda s: False
            out.append(cls[0])
            i = cls[1]
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    full = re.compile("".join(out), re.DOTALL).fullmatch
    return lambda s: full(s) is not None
