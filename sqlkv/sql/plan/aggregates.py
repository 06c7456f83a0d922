"""Aggregate extraction: rewriting a grouped query's expressions over the aggregation's output.

For ``SELECT dept, count(*) + 1 FROM emp GROUP BY dept HAVING max(salary) > 10`` the planner
builds ``HashAggregate(keys=[dept], aggs=[count(*), max(salary)])`` whose output row is
``(dept, __agg0, __agg1)``. The select list and HAVING are then rewritten against that row:
``count(*) + 1`` becomes ``__agg0 + 1`` and ``max(salary) > 10`` becomes ``__agg1 > 10``. Group
keys that are plain columns keep their name and table in the output scope, so ``dept`` and
``emp.dept`` (also from correlated subqueries) resolve naturally; other key expressions are
matched by their SQL text and become ``__grpN``. A bare column that is neither grouped nor
aggregated takes its value from some row of the group (SQLite's rule) via a hidden
``any_value`` aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError
from sqlkv.sql.context import Column, Scope
from sqlkv.sql.exec.aggregate_spec import AggregateSpec
from sqlkv.sql.expr import infer_type
from sqlkv.sql.arraycasts import array_of
from sqlkv.sql.types import JSONB, SqlType
from sqlkv.sql.plan.names import QUERY_NODES, LazySql
from sqlkv.sql.exec.aggregate_more import check_percentile_args, refuse_untyped
from sqlkv.sql.exec.jsonb_aggregates import JSONB_AGGREGATES, pair_argument

SIMPLE_AGGS = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min",
               exp.Max: "max", exp.GroupConcat: "group_concat", exp.LogicalAnd: "bool_and",
               exp.LogicalOr: "bool_or", exp.ArrayAgg: "array_agg", exp.Grouping: "grouping"}
ANON_AGGS = {"total", "group_concat", "string_agg", "any_value", "every", "bit_and", "bit_or", "bit_xor",
             "concat_agg", "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg", "array_agg"}
WITHIN_GROUP = {exp.PercentileCont: "percentile_cont", exp.PercentileDisc: "percentile_disc", exp.Mode: "mode"}


def aggregate_name(node: exp.Expression) -> str | None:
    """The aggregate function a node calls, or None when it is not an aggregate call."""
    if isinstance(node, exp.Filter):
        inner = aggregate_name(node.this)
        if inner is None:
            raise ProgrammingError(f"FILTER specified, but {node.this.sql()[:40]} is not an aggregate function")
        return inner
    if isinstance(node, exp.WithinGroup):
        inner_node = node.this
        name = WITHIN_GROUP.get(type(inner_node))
        if name is None and isinstance(inner_node, exp.Anonymous):
            name = inner_node.name.lower()
        if name not in ("percentile_cont", "percentile_disc", "mode"):
            raise ProgrammingError("WITHIN GROUP is only for the ordered-set aggregates "
                                   f"percentile_cont, percentile_disc and mode: {inner_node.sql()[:40]}")
        return name
    if not isinstance(node, exp.Func):
        return None
    name = SIMPLE_AGGS.get(type(node))
    if name is not None:
        if name in ("min", "max") and node.expressions:
            return None  # min(a, b) is SQLite's scalar two-argument form
        return name
    if isinstance(node, exp.Anonymous) and node.name.lower() in ANON_AGGS:
        return node.name.lower()
    return None


def contains_aggregate(node: exp.Expression) -> bool:
    """True when ``node`` calls an aggregate at this query level (not in subqueries/OVER)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Window):
            if isinstance(n.this, (exp.Filter, exp.WithinGroup)):
                raise NotSupportedError("FILTER / WITHIN GROUP on a window function is not supported")
            # the window's function is not a plain aggregate, but its arguments may be
            stack.extend(a for a in n.iter_expressions() if a is not n.this)
            stack.extend(n.this.iter_expressions())
            continue
        if aggregate_name(n) is not None:
            return True
        if n is not node and isinstance(n, QUERY_NODES):
            continue
        stack.extend(n.iter_expressions())
    return False


@dataclass
class AggregateCall:
    """One distinct aggregate call found in the query: its AST and its argument expressions."""

    func: str
    arg: exp.Expression | None
    distinct: bool
    separator: str
    text: object  # str() gives the call's SQL (for EXPLAIN)
    order: list = field(default_factory=list)  # (node, desc, nulls_first): ORDER BY / WITHIN GROUP
    filter: exp.Expression | None = None  # FILTER (WHERE ...)
    fraction: exp.Expression | None = None  # percentile_cont(fraction)
    grouping: list[int] = field(default_factory=list)  # grouping(a, b): the group key positions


@dataclass
class GroupingRewriter:
    """Collects group keys and aggregate calls, and rewrites expressions over the agg output."""

    input_scope: Scope
    key_nodes: list[exp.Expression]
    calls: list[AggregateCall] = field(default_factory=list)
    bare_columns: dict[int, int] = field(default_factory=dict)  # input idx -> call index
    _call_by_node: dict[exp.Expression, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.expr_keys = [(pos, k) for pos, k in enumerate(self.key_nodes)
                          if not isinstance(k, exp.Column)]
        self.key_index: dict[int, int] = {}  # input column idx -> key position
        for pos, key in enumerate(self.key_nodes):
            idx = self._input_index(key)
            if idx is not None:
                self.key_index.setdefault(idx, pos)

    def _input_index(self, node: exp.Expression) -> int | None:
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return None
        return self.input_scope.find(node.name, node.table or None)

    # -- rewriting ------------------------------------------------------------------------

    def rewrite(self, node: exp.Expression) -> exp.Expression:
        """A rewritten copy of ``node`` referring to the aggregation output's columns."""
        return self._rewrite(node.copy())

    def _rewrite(self, node: exp.Expression) -> exp.Expression:
        replaced = self._replacement(node)
        if replaced is not None:
            return replaced
        if isinstance(node, QUERY_NODES + (exp.Column, exp.Identifier, exp.Literal)):
            return node
        if isinstance(node, exp.Window):
            # the window's own function stays; its arguments, PARTITION BY, ORDER BY are rewritten
            for child in list(node.this.iter_expressions()):
                new = self._rewrite(child)
                if new is not child:
                    child.replace(new)
            for child in [c for c in node.iter_expressions() if c is not node.this]:
                new = self._rewrite(child)
                if new is not child:
                    child.replace(new)
            return node
        for child in list(node.iter_expressions()):
            new = self._rewrite(child)
            if new is not child:
                child.replace(new)
        return node

    def _replacement(self, node: exp.Expression) -> exp.Expression | None:
        if self.expr_keys and not isinstance(node, (exp.Literal, exp.Column, exp.Identifier, exp.Star)):
            for pos, key in self.expr_keys:
                if node == key:
                    return exp.column(f"__grp{pos}")
        func = aggregate_name(node) if not isinstance(node.parent, exp.Window) or node.parent.this is not node else None
        if func is not None:
            return exp.column(f"__agg{self._add_call(node, func)}")
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return self._column(node)
        return None

    def _column(self, node: exp.Column) -> exp.Expression | None:
        idx = self._input_index(node)
        if idx is None:
            return None  # an outer reference (or an error compile will report)
        if idx in self.key_index:
            return None  # resolves by name in the output scope
        if idx not in self.bare_columns:
            self.bare_columns[idx] = len(self.calls)
            self.calls.append(AggregateCall("any_value", exp.column(node.name, node.table or None),
                                            False, ",", "any_value"))
        return None

    def _add_call(self, node: exp.Expression, func: str) -> int:
        if node in self._call_by_node:
            return self._call_by_node[node]
        if func == "grouping":
            call = AggregateCall("grouping", None, False, ",", LazySql(node),
                                 grouping=[self._key_position(a) for a in node.expressions])
            if not call.grouping:
                raise ProgrammingError("grouping() needs at least one argument")
        else:
            call = _describe_call(node, func)
        self.calls.append(call)
        self._call_by_node[node] = len(self.calls) - 1
        return len(self.calls) - 1

    @staticmethod
    def _separator(node: exp.Expression, func: str) -> str:
        if func not in ("group_concat", "string_agg"):
            return ","
        sep = node.args.get("separator")
        if sep is None and isinstance(node, exp.Anonymous) and len(node.expressions) > 1:
            sep = node.expressions[1]
        if sep is None:
            return ","
        if isinstance(sep, exp.Literal):
            return sep.this
        if isinstance(sep, exp.Column) and isinstance(sep.this, exp.Identifier):
            return sep.name  # sqlglot reads a quoted separator as an identifier
        raise ProgrammingError(f"{func}() separator must be a string literal")

    def _key_position(self, node: exp.Expression) -> int:
        idx = self._input_index(node)
        for pos, key in enumerate(self.key_nodes):
            if key == node or (idx is not None and self._input_index(key) == idx):
                return pos
        raise ProgrammingError(f"arguments to GROUPING must be grouping expressions of the query: {node.sql()[:40]}")

    # -- output ---------------------------------------------------------------------------

    def output_columns(self) -> list[Column]:
        """The aggregation output's columns: group keys, then aggregate results."""
        cols: list[Column] = []
        for pos, key in enumerate(self.key_nodes):
            idx = self._input_index(key)
            if idx is not None and self.key_index.get(idx) == pos:
                src = self.input_scope.columns[idx]
                cols.append(Column(src.name, src.table, src.type, hidden=True))
            else:
                cols.append(Column(f"__grp{pos}", None, None, hidden=True))
        inverse = {call: idx for idx, call in self.bare_columns.items()}
        for i, call in enumerate(self.calls):
            if i in inverse:
                src = self.input_scope.columns[inverse[i]]
                cols.append(Column(src.name, src.table, src.type, hidden=True))
            else:
                cols.append(Column(f"__agg{i}", None, self._zoned_type(call), hidden=True))
        return cols

    def _zoned_type(self, call: AggregateCall) -> SqlType | None:
        """min/max of a TIMESTAMPTZ is a TIMESTAMPTZ (returned in the session time zone);
        array_agg(x) is x's type []; the JSONB aggregates' results are JSONB (issue 15)."""
        if call.func == "array_agg" and call.arg is not None:
            return array_of(infer_type(call.arg, self.input_scope))
        if call.func in JSONB_AGGREGATES:
            return JSONB
        if call.func in ("min", "max") and call.arg is not None:
            typ = infer_type(call.arg, self.input_scope)
            if typ.tz:
                return typ
        return None

    def specs(self, compile_arg, compile_constant=None, compile_pred=None) -> list[AggregateSpec]:
        compile_pred = compile_pred or compile_arg
        out = []
        for c in self.calls:
            if c.fraction is not None and compile_constant is None:
                raise NotSupportedError(f"{c.func}() is not supported as a window function")
            order = [(compile_arg(n), desc, nf) for n, desc, nf in c.order]
            out.append(AggregateSpec(
                c.func, compile_arg(c.arg) if c.arg is not None else None, c.distinct, c.separator, c.text,
                filter=compile_pred(c.filter) if c.filter is not None else None, order=order,
                fraction=compile_constant(c.fraction) if c.fraction is not None else None,
                grouping=c.grouping))
        return out


def _describe_call(node: exp.Expression, func: str) -> AggregateCall:
    """The parts of one aggregate call: argument, DISTINCT, separator, ORDER BY, FILTER, fraction."""
    refuse_untyped(func)
    text = LazySql(node)
    filter_node = None
    if isinstance(node, exp.Filter):
        where = node.expression
        filter_node = where.this if isinstance(where, exp.Where) else where
        if contains_aggregate(filter_node):
            raise ProgrammingError("aggregate functions are not allowed in FILTER")
        node = node.this
    node = pair_argument(node, func)  # issue 15: jsonb_object_agg(k, v) takes one (k, v) pair
    if isinstance(node, exp.WithinGroup):
        inner = node.this
        args = list(inner.iter_expressions())
        check_percentile_args(func, len(args))
        terms = node.expression.expressions if isinstance(node.expression, exp.Order) else []
        if len(terms) != 1:
            raise ProgrammingError(f"{func}() WITHIN GROUP needs exactly one ORDER BY expression")
        order = [_order_term(t) for t in terms]
        return AggregateCall(func, order[0][0], False, ",", text, order, filter_node,
                             args[0] if args else None)
    _check_arity(node, func)
    anon = isinstance(node, exp.Anonymous)
    arg = node.this if not anon else (node.expressions[0] if node.expressions else None)
    if anon and len(node.expressions) > 1 and func not in ("group_concat", "string_agg"):
        raise ProgrammingError(f"{func}() takes one argument")
    order = []
    if isinstance(arg, exp.Order):  # group_concat(x ORDER BY y)
        order = [_order_term(t) for t in arg.expressions]
        arg = arg.this
    elif anon and len(node.expressions) > 1 and isinstance(node.expressions[1], exp.Order):
        sep_order = node.expressions[1]  # string_agg(x, sep ORDER BY y) as an anonymous call
        order = [_order_term(t) for t in sep_order.expressions]
        node = node.copy()
        node.expressions[1].replace(sep_order.this.copy())
    distinct = False
    if isinstance(arg, exp.Distinct):
        distinct = True
        inner_args = arg.expressions
        if len(inner_args) != 1:
            raise ProgrammingError(f"{func}(DISTINCT ...) takes exactly one argument")
        arg = inner_args[0]
    if isinstance(arg, exp.Star):
        if func != "count":
            raise ProgrammingError(f"{func}(*) is not valid")
        arg = None
    elif arg is None and func != "count":
        raise ProgrammingError(f"{func}() requires an argument")
    for part in [arg, filter_node, *[o[0] for o in order]]:
        if part is not None and contains_aggregate(part):
            raise ProgrammingError("aggregate function calls cannot be nested")
    if distinct and order and any(o[0] != arg for o in order):
        raise ProgrammingError("in an aggregate with DISTINCT, ORDER BY expressions must appear in the argument list")
    separator = GroupingRewriter._separator(node, func)
    return AggregateCall(func, arg, distinct, separator, text, order, filter_node)


def _order_term(term: exp.Expression) -> tuple[exp.Expression, bool, bool | None]:
    if isinstance(term, exp.Ordered):
        desc = bool(term.args.get("desc"))
        # sqlglot fills nulls_first with its dialect default: keep only an explicit NULLS FIRST/LAST
        explicit = "NULLS" in term.sql().upper()
        return term.this, desc, (bool(term.args.get("nulls_first")) if explicit else None)
    return term, False, None


def _check_arity(node: exp.Expression, func: str) -> None:
    """Refuse extra arguments sqlglot parses but an aggregate would silently drop (count(a, b))."""
    if isinstance(node, exp.Anonymous):
        extra = len(node.expressions) > (2 if func in ("group_concat", "string_agg") else 1)
    elif isinstance(node, exp.GroupConcat):
        extra = node.args.get("on_overflow") is not None
    else:
        extra = bool(node.args.get("expressions"))
    if extra:
        most = "two arguments" if func in ("group_concat", "string_agg") else "one argument"
        raise ProgrammingError(f"{func}() takes at most {most}")
