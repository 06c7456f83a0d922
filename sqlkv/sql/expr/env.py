"""What the expression compiler needs besides a scope, and what it produces internally."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlglot import exp

from sqlkv.sql.context import ExecContext, Scope
from sqlkv.sql.types import NULLTYPE, SqlType

if TYPE_CHECKING:
    from sqlkv.sql.exec.operator import Operator


def column_parts(node: exp.Column) -> tuple[str, str]:
    """``(node.name, node.table)``, read from the column's identifiers directly: sqlglot's
    properties go through ``text()`` (some forty interpreter steps each), and planning a short
    SELECT reads them a dozen times."""
    args = node.args
    this, table = args.get("this"), args.get("table")
    name = this.args["this"] if type(this) is exp.Identifier else node.name  # not `.this`: a property
    if table is None:
        return name, ""
    return name, table.args["this"] if type(table) is exp.Identifier else node.table


class SubqueryPlanner(Protocol):
    """Implemented by the query planner: plans a subquery with ``outer`` as enclosing scope."""

    def plan_subquery(self, query: exp.Expression, outer: Scope) -> Operator: ...


@dataclass
class CompileEnv:
    """The plan's context (params, now, txn are read from it at run time) and the subquery planner."""

    ctx: ExecContext = field(default_factory=ExecContext)
    subqueries: SubqueryPlanner | None = None
    functions: dict[str, Any] = field(default_factory=dict)  # the session's user functions


RowFn = Callable[[tuple], Any]


@dataclass
class Compiled:
    """A compiled sub-expression: its closure, static type, and constant value when folded.

    ``const`` means the value is known at compile time (``value``); ``untyped_text`` marks a
    string literal, which takes the type of the operand it is compared with (``'2024-01-01'``
    against a DATE column is a date), as untyped literals do in SQL. ``column`` is the row
    position when the node is a plain column of the current scope, so that operators can read
    ``r[i]`` inline instead of calling a closure; ``pred`` is an optional TRUE-only closure
    (NULL -> False) that WHERE clauses use instead of ``fn(r) is True``.
    """

    fn: RowFn
    type: SqlType = NULLTYPE
    const: bool = False
    value: Any = None
    untyped_text: bool = False
    column: int | None = None
    pred: RowFn | None = None


def constant(value: Any, typ: SqlType, untyped_text: bool = False) -> Compiled:
    return Compiled(lambda r: value, typ, True, value, untyped_text)
