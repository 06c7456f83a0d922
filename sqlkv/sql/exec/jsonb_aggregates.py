"""JSONB aggregates (issue 15): ``jsonb_agg(x [ORDER BY ...]) [FILTER (...)]`` and
``jsonb_object_agg(k, v)`` (``json_*`` the same: JSON is JSONB in sqlkv).

jsonb_agg keeps every input, SQL NULL as JSON null, in input order (or the ORDER BY's);
jsonb_object_agg builds one object, the last value of a repeated key winning, and refuses a NULL
key. No input rows give NULL, as in PostgreSQL. The planner hands jsonb_object_agg its two
arguments as one pair, ``jsonb_build_array(k, v)`` (`pair_argument`), because an aggregate call
has one argument; DISTINCT, ORDER BY and FILTER work as for any aggregate.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.encoding.jsonb import Jsonb, sorted_object, to_text
from sqlkv.errors import DataError, ProgrammingError
from sqlkv.sql.exec.aggregate import Accumulator
from sqlkv.sql.expr.jsonb_ops import sql_value_tree
from sqlkv.sql.expr.row_json import whole_row_aggregate_argument

JSONB_AGGREGATES = frozenset({"jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg"})


class JsonbAgg(Accumulator):
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list | None = None

    def add(self, value: Any) -> None:
        if self.items is None:
            self.items = []
        self.items.append(sql_value_tree(value))

    def result(self) -> Any:
        # a copy: a window frame keeps adding after reading a result
        return None if self.items is None else Jsonb(list(self.items))


class JsonbObjectAgg(Accumulator):
    __slots__ = ("pairs",)

    def __init__(self) -> None:
        self.pairs: dict | None = None

    def add(self, value: Any) -> None:
        key, item = value.tree  # jsonb_build_array(k, v): see pair_argument
        if key is None:
            raise DataError("jsonb_object_agg(): field name must not be null")
        if self.pairs is None:
            self.pairs = {}
        self.pairs[key if isinstance(key, str) else to_text(key)] = item

    def result(self) -> Any:
        return None if self.pairs is None else Jsonb(sorted_object(self.pairs))


FACTORIES = {"jsonb_agg": JsonbAgg, "json_agg": JsonbAgg, "jsonb_object_agg": JsonbObjectAgg,
             "json_object_agg": JsonbObjectAgg}


def pair_argument(node: exp.Expression, func: str) -> exp.Expression:
    """``jsonb_object_agg(k, v [ORDER BY ...])`` as a one-argument call on ``jsonb_build_array(k, v)``;
    ``jsonb_agg(t)`` of a whole row as ``jsonb_agg(to_jsonb(t))`` (expr/row_json.py)."""
    if func in ("jsonb_agg", "json_agg") and isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
        return exp.Anonymous(this=node.this, expressions=[_row_argument(node.expressions[0])])
    if func not in ("jsonb_object_agg", "json_object_agg") or not isinstance(node, exp.Anonymous):
        return node
    args = list(node.expressions)
    if len(args) != 2:
        raise ProgrammingError(f"{func}() takes two arguments: key, value")
    key, value = args
    if isinstance(key, exp.Distinct):
        raise ProgrammingError(f"{func}(DISTINCT ...) is not supported")
    order = value if isinstance(value, exp.Order) else None
    pair = exp.Anonymous(this="jsonb_build_array", expressions=[key.copy(), (order.this if order else value).copy()])
    arg: exp.Expression = pair
    if order is not None:
        arg = exp.Order(this=pair, expressions=[t.copy() for t in order.expressions])
    return exp.Anonymous(this=node.this, expressions=[arg])


def _row_argument(arg: exp.Expression) -> exp.Expression:
    """jsonb_agg's argument with a whole-row reference (or ROW) inside ORDER BY / DISTINCT read as to_jsonb's."""
    if isinstance(arg, exp.Order):
        return exp.Order(this=whole_row_aggregate_argument(arg.this.copy()), expressions=[t.copy() for t in arg.expressions])
    if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
        return exp.Distinct(expressions=[whole_row_aggregate_argument(arg.expressions[0].copy())])
    return whole_row_aggregate_argument(arg.copy())
