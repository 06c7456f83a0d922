"""How deeply a statement may nest, and the error for one that nests deeper.

Parsing, planning and compiling a statement walk its expression tree recursively, and so does
evaluating the compiled closures, so the depth a statement can reach is bounded by Python's
recursion limit (1,000 frames by default: about 50 nested parentheses in sqlglot's parser).
sessions raise the limit to `RECURSION_LIMIT` -- safe on CPython 3.11+, where Python-to-Python
calls use no C stack -- which takes a few hundred levels of nested parentheses, function calls
or subqueries and chains of thousands of AND/OR/+ terms (what generated SQL produces). Deeper
input fails as a ProgrammingError, never as a RecursionError or a crash.
"""

from __future__ import annotations

import sys

from sqlkv.errors import ProgrammingError

RECURSION_LIMIT = 20_000


def ensure_recursion_headroom() -> None:
    """Raise the interpreter's recursion limit to `RECURSION_LIMIT` (never lower it)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def too_deep(sql: str) -> ProgrammingError:
    shown = sql if len(sql) <= 60 else sql[:57] + "..."
    return ProgrammingError(
        f"statement is nested too deeply: {shown!r} (sqlkv handles a few hundred levels of nested "
        f"parentheses, function calls or subqueries, and chains of thousands of AND/OR/+ terms)")
