"""PostgreSQL operators sqlglot has no node for: ``a OPERATOR(@>) b`` (`exp.Operator`).

The parser spells ``@>``, ``<@``, ``?``, ``?|``, ``?&`` and ``#-`` this way (sqlkv/sql/parse_jsonb.py).
The meaning depends on the operand types, so each type family registers a resolver: a function
``(compiler, op, left, right) -> Compiled | None`` that answers for its operand types and returns
None otherwise. JSONB registers one (sqlkv/sql/expr/jsonb.py); ARRAY operands register their own
beside it. Operands nobody answers for are an error naming the operator and the types.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.expr.compile import Compiler, handles
from sqlkv.sql.expr.env import Compiled

Resolver = Callable[[Compiler, str, Compiled, Compiled], "Compiled | None"]
RESOLVERS: list[Resolver] = []


def register_resolver(resolver: Resolver) -> Resolver:
    RESOLVERS.append(resolver)
    return resolver


def operator_name(node: exp.Operator) -> str:
    """``@>`` from ``OPERATOR(@>)`` or ``OPERATOR(pg_catalog.@>)``."""
    name = str(node.args.get("operator") or "").replace(" ", "")
    return name.rsplit(".", 1)[-1]


@handles(exp.Operator)
def _operator(c: Compiler, node: exp.Operator) -> Compiled:
    op = operator_name(node)
    left, right = c.compile(node.this), c.compile(node.expression)
    for resolve in RESOLVERS:
        compiled = resolve(c, op, left, right)
        if compiled is not None:
            return compiled
    raise ProgrammingError(f"operator does not exist: {left.type.sql()} {op} {right.type.sql()}")
