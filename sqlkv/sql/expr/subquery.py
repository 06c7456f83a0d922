"""Subqueries inside expressions: scalar ``(SELECT ...)``, EXISTS, IN (SELECT ...), ANY/ALL.

``WHERE o.total > (SELECT avg(total) FROM orders WHERE cust = o.cust)`` asks the query planner
(`CompileEnv.subqueries`) for an operator planned with the current scope as its outer scope.
At run time the closure stores the current row in ``scope.cell[0]`` -- the subquery's references
to ``o.cust`` read it from there -- then pulls rows from the operator. An operator whose
``correlated`` attribute is False is evaluated once per statement execution and its result
reused (the cache is keyed on the context's transaction, statement time and parameters, which
the session renews per execution); without the attribute it is re-run for each row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.casts import cast
from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.operator import counted
from sqlkv.sql.expr.env import Compiled, constant
from sqlkv.sql.expr.operators import COMPARE_OPS, compatible, generic_compare, to_timestamp
from sqlkv.sql.types import BOOL, NULLTYPE, SqlType, float_as_decimal

_NO_ROW = object()


def _plan(c: Any, node: exp.Expression) -> Any:
    if c.env.subqueries is None:
        raise NotSupportedError("subqueries are not supported in this context")
    query = node.this if isinstance(node, (exp.Subquery, exp.Exists, exp.Any, exp.All)) else node
    while isinstance(query, exp.Subquery):
        query = query.this
    return c.env.subqueries.plan_subquery(query, c.scope)


class _Runner:
    """Runs a subquery operator for a row, caching uncorrelated results per execution."""

    def __init__(self, op: Any, ctx: ExecContext, cell: list) -> None:
        self.op = op
        self.ctx = ctx
        self.cell = cell
        self.cacheable = getattr(op, "correlated", True) is False
        self.cache_key: tuple | None = None
        self.cached: Any = None

    def fresh(self) -> bool:
        """True when a cached result exists for the current execution."""
        if not self.cacheable or self.cache_key is None:
            return False
        ctx = self.ctx
        k = self.cache_key
        return k[0] is ctx.txn and k[1] is ctx.now and k[2] is ctx.params

    def remember(self, value: Any) -> Any:
        if self.cacheable:
            ctx = self.ctx
            self.cache_key = (ctx.txn, ctx.now, ctx.params)
            self.cached = value
        return value

    def rows(self, row: tuple) -> Any:
        self.cell[0] = row
        if self.ctx.stats is not None:  # EXPLAIN ANALYZE: the subquery's lines get their figures
            return counted(self.op, self.ctx)
        return self.op.rows(self.ctx)


def compile_subquery(c: Any, node: exp.Expression) -> Compiled:
    if c.typing_only:
        return Compiled(lambda r: None, BOOL if isinstance(node, exp.Exists) else NULLTYPE)
    op = _plan(c, node)
    runner = _Runner(op, c.env.ctx, c.scope.cell)
    if isinstance(node, exp.Exists):
        return Compiled(_exists(runner), BOOL)
    if len(op.columns) != 1:
        raise ProgrammingError("subquery must return only one column")
    typ = op.columns[0].type or NULLTYPE
    return Compiled(_scalar(runner), typ)


def compile_array_subquery(c: Any, node: exp.Expression, array_type: Callable[[SqlType], SqlType],
                           make: Callable[[Any], Any]) -> Compiled:
    """``ARRAY(SELECT x ...)``: the one column of every row, in the subquery's order, as one value
    (``make`` builds it from the values; ``array_type`` names its type; sqlkv/sql/expr/arrays.py)."""
    if c.typing_only:
        return Compiled(lambda r: None, array_type(NULLTYPE))
    op = _plan(c, node)
    if len(op.columns) != 1:
        raise ProgrammingError("subquery must return only one column")
    runner = _Runner(op, c.env.ctx, c.scope.cell)

    def collect(r: tuple) -> object:
        if runner.fresh():
            return runner.cached
        return runner.remember(make(row[0] for row in runner.rows(r)))

    return Compiled(collect, array_type(op.columns[0].type or NULLTYPE))


def _exists(runner: _Runner) -> Callable[[tuple], object]:
    def exists(r: tuple) -> object:
        if runner.fresh():
            return runner.cached
        it = runner.rows(r)
        found = next(iter(it), _NO_ROW) is not _NO_ROW
        _close(it)
        return runner.remember(found)

    return exists


def _scalar(runner: _Runner) -> Callable[[tuple], object]:
    def scalar(r: tuple) -> object:
        if runner.fresh():
            return runner.cached
        it = iter(runner.rows(r))
        first = next(it, _NO_ROW)
        if first is _NO_ROW:
            return runner.remember(None)
        if next(it, _NO_ROW) is not _NO_ROW:
            _close(it)
            raise DataError("more than one row returned by a subquery used as an expression")
        return runner.remember(first[0])

    return scalar


def _close(it: Any) -> None:
    close = getattr(it, "close", None)
    if close is not None:
        close()


def _check_column(c: Any, left: Compiled, op: Any, what: str) -> Compiled:
    """Check the left operand against the subquery's column type; an untyped literal takes it."""
    if len(op.columns) != 1:
        raise ProgrammingError(f"subquery has too many columns for {what}")
    sub_type: SqlType | None = op.columns[0].type
    if sub_type is None or not sub_type.known:
        return left
    if left.untyped_text:
        try:
            return constant(cast(left.value, sub_type), sub_type)
        except DataError:
            return left  # compared per row: an error only if the subquery yields a row
    if left.type.known and not compatible(left.type.kind, sub_type.kind):
        raise ProgrammingError(f"operator does not exist: {left.type.sql()} {what} {sub_type.sql()}")
    return left


def _float_as_decimal_member(v: Any) -> Any:
    return float_as_decimal(v) if isinstance(v, float) else v


def compile_in_subquery(c: Any, node: exp.In) -> Compiled:
    """``x IN (SELECT ...)``: TRUE if found; NULL if not found but x or a subquery value is NULL."""
    left = c.compile(node.this)
    if c.typing_only:
        return Compiled(lambda r: None, BOOL)
    op = _plan(c, node.args["query"])
    left = _check_column(c, left, op, "IN")
    runner = _Runner(op, c.env.ctx, c.scope.cell)
    fv = left.fn
    sub_type = op.columns[0].type
    kinds = {left.type.kind, sub_type.kind if sub_type is not None else None}
    # hashed members must be equal exactly when "=" is TRUE: FLOATs meet DECIMALs as decimals
    member = _float_as_decimal_member if kinds == {"FLOAT", "DECIMAL"} else to_timestamp

    def load(r: tuple) -> tuple[set, bool, bool]:
        if runner.fresh():
            return runner.cached
        members: set = set()
        has_null = False
        for row in runner.rows(r):
            v = row[0]
            if v is None:
                has_null = True
            else:
                members.add(member(v))
        return runner.remember((members, has_null, bool(members) or has_null))

    def in_subquery(r: tuple) -> object:
        v = fv(r)
        members, has_null, nonempty = load(r)
        if not nonempty:
            return False
        if v is None:
            return None
        probe = member(v)
        try:
            if probe in members:
                return True
        except TypeError:
            raise ProgrammingError("IN operand is not hashable") from None
        if members:
            sample = next(iter(members))
            generic_compare("=", probe, sample)  # raises on incompatible kinds
        return None if has_null else False

    return Compiled(in_subquery, BOOL)


def compile_quantified(c: Any, node: exp.Binary, op_name: str) -> Compiled:
    """``x op ANY (SELECT ...)`` / ``x op ALL (SELECT ...)`` with SQL NULL semantics."""
    left = c.compile(node.this)
    quantifier = node.expression
    is_all = isinstance(quantifier, exp.All)
    if c.typing_only:
        return Compiled(lambda r: None, BOOL)
    inner = quantifier.this
    if not isinstance(inner, (exp.Subquery, exp.Select)):
        raise NotSupportedError("ANY/ALL need a subquery")
    op = _plan(c, inner)
    left = _check_column(c, left, op, op_name)
    runner = _Runner(op, c.env.ctx, c.scope.cell)
    fv = left.fn
    cmp = COMPARE_OPS[op_name]

    def quantified(r: tuple) -> object:
        v = fv(r)
        if runner.fresh():
            values = runner.cached
        else:
            values = runner.remember([row[0] for row in runner.rows(r)])
        if not values:
            return is_all  # ALL over nothing is TRUE, ANY over nothing is FALSE
        if v is None:
            return None
        saw_null = False
        for w in values:
            if w is None:
                saw_null = True
                continue
            a, b = to_timestamp(v), to_timestamp(w)
            result = cmp(a, b) if type(a) is type(b) else generic_compare(op_name, a, b)
            if is_all and not result:
                return False
            if not is_all and result:
                return True
        if saw_null:
            return None
        return is_all

    return Compiled(quantified, BOOL)


def compile_row_subquery(c: Any, node: exp.Expression, width: int) -> Callable[[tuple], tuple]:
    """``SET (a, b) = (SELECT x, y ...)``: a closure giving the subquery's one row (all NULLs when
    it returns none; DataError for several), checked to have ``width`` columns."""
    op = _plan(c, node)
    if len(op.columns) != width:
        raise ProgrammingError(f"number of columns does not match number of values: "
                               f"{width} targets, the subquery returns {len(op.columns)}")
    runner = _Runner(op, c.env.ctx, c.scope.cell)
    empty = (None,) * width

    def row_of(r: tuple) -> tuple:
        if runner.fresh():
            return runner.cached
        it = iter(runner.rows(r))
        first = next(it, _NO_ROW)
        if first is _NO_ROW:
            return runner.remember(empty)
        if next(it, _NO_ROW) is not _NO_ROW:
            _close(it)
            raise DataError("more than one row returned by a subquery used as an expression")
        return runner.remember(tuple(first))

    return row_of


def compile_row_in_subquery(c: Any, left_items: list[exp.Expression], query: exp.Expression) -> Compiled:
    """``(a, b) IN (SELECT x, y ...)``: the OR of the row equalities, with SQL's NULL rules --
    TRUE when a subquery row equals the left row, else NULL when some comparison is NULL."""
    lefts = [c.compile(n) for n in left_items]
    if c.typing_only:
        return Compiled(lambda r: None, BOOL)
    op = _plan(c, query)
    if len(op.columns) != len(lefts):
        raise ProgrammingError(f"subquery has {len(op.columns)} columns, the row has {len(lefts)}")
    runner = _Runner(op, c.env.ctx, c.scope.cell)
    fns = [p.fn for p in lefts]

    def load(r: tuple) -> tuple[set, list]:
        if runner.fresh():
            return runner.cached
        complete: set = set()
        partial: list = []  # rows holding a NULL: they can only make the answer NULL
        for row in runner.rows(r):
            key = tuple(to_timestamp(v) for v in row)
            (partial.append(key) if None in key else complete.add(key))
        return runner.remember((complete, partial))

    def row_in(r: tuple) -> object:
        probe = tuple(to_timestamp(f(r)) for f in fns)
        complete, partial = load(r)
        if None not in probe:
            try:
                if probe in complete:
                    return True
            except TypeError:
                raise ProgrammingError("IN operand is not hashable") from None
            candidates = partial
        else:
            candidates = [*complete, *partial]
        unknown = False
        for row in candidates:
            if all(a is None or b is None or a == b for a, b in zip(probe, row)):
                unknown = True  # equal wherever both are known: NULL (a known pair differing is FALSE)
                break
        return None if unknown else False

    return Compiled(row_in, BOOL)
