"""Clauses sqlglot parses but sqlkv does not implement: refused right after parsing.

A clause that is accepted and then ignored gives wrong answers without a word (a sample that
returns every row, a frame exclusion that excludes nothing), so each one found in the tree is
a NotSupportedError naming it. Clauses whose meaning sqlkv does honour are not here: FOR
UPDATE / FOR SHARE (NOWAIT, SKIP LOCKED) read as plain SERIALIZABLE reads -- no transaction
ever holds a row lock, so no row is skipped or waited for -- and CTE MATERIALIZED hints only
choose a strategy.

Also here, because it is the same look at the same nodes right after parsing: the row-limit
forms sqlglot reads into shapes the planner does not take (`standard_limits`: FETCH FIRST as
LIMIT, LIMIT ALL as none) are rewritten into the one form it does.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import NotSupportedError


REFUSABLE_NODES = (exp.TableSample, exp.LimitOptions, exp.WindowSpec, exp.With, exp.TableAlias, exp.Group,
                   exp.Qualify, exp.Connect, exp.Cluster, exp.Sort, exp.Distribute, exp.WithTableHint)
# Other dialects' SELECT clauses sqlglot reads into a node of their own (the planner never
# looks at them): QUALIFY would filter nothing, CONNECT BY recurse over nothing, SORT BY
# leave the rows unsorted
_OTHER_DIALECTS = {exp.Qualify: "QUALIFY", exp.Connect: "CONNECT BY", exp.Cluster: "CLUSTER BY", exp.Sort: "SORT BY",
                   exp.Distribute: "DISTRIBUTE BY"}


def refuse_ignored_clauses(ast: exp.Expression, nodes: list[exp.Expression] | None = None) -> None:
    """NotSupportedError for the first clause in ``ast`` that sqlkv would silently ignore
    (``nodes``: all of ``ast``'s, when the caller has them: in ``walk()`` order, or as the
    plain parser built them, which has one refusable node at most)."""
    found = ast.find_all(*REFUSABLE_NODES) if nodes is None else (n for n in nodes if isinstance(n, REFUSABLE_NODES))
    for node in found:
        why = _why_refused(node)
        if why is not None:
            raise NotSupportedError(why)


def _why_refused(node: exp.Expression) -> str | None:
    clause = _OTHER_DIALECTS.get(type(node))
    if clause is not None:
        return f"{clause} is not supported"
    if isinstance(node, exp.Group):
        return _group_refusal(node)
    if isinstance(node, exp.WithTableHint):
        return f"table hints ({node.sql()}) are not supported"
    if isinstance(node, exp.TableSample):
        return "TABLESAMPLE is not supported (it would return every row, not a sample)"
    if isinstance(node, exp.LimitOptions):
        if node.args.get("with_ties"):
            return "LIMIT/FETCH ... WITH TIES is not supported"
        if node.args.get("percent"):
            return "LIMIT/FETCH ... PERCENT is not supported"
    if isinstance(node, exp.WindowSpec):
        exclude = node.args.get("exclude")
        if exclude is not None and exclude.name.upper() != "NO OTHERS":
            return f"window frame EXCLUDE {exclude.name.upper()} is not supported"
    if isinstance(node, exp.With) and node.args.get("search") is not None:
        search = node.args["search"]
        kind = str(search.args.get("kind") or "").upper()
        clause = "CYCLE" if kind == "CYCLE" else f"SEARCH {kind} FIRST"
        return f"the {clause} clause of WITH RECURSIVE is not supported"
    if isinstance(node, exp.TableAlias) and isinstance(node.this, exp.Parameter):
        table = node.parent.name if isinstance(node.parent, exp.Table) else "a table"
        return f'index hints ({table}@{node.this.name}) are not supported: the planner chooses the index'
    return None


def _group_refusal(group: exp.Group) -> str | None:
    """MySQL's ``GROUP BY a WITH ROLLUP`` / ``WITH CUBE``, ClickHouse's ``WITH TOTALS``,
    DuckDB's ``GROUP BY ALL`` and PostgreSQL's ``GROUP BY DISTINCT`` over grouping sets
    (sqlglot keeps them beside the grouping expressions, where the planner would group by
    the expressions alone, or by nothing)."""
    for modifier in ("rollup", "cube"):
        if group.args.get(modifier):
            word = modifier.upper()
            return f"GROUP BY ... WITH {word} is not supported; write GROUP BY {word} (...)"
    if group.args.get("totals"):
        return "GROUP BY ... WITH TOTALS is not supported"
    every = group.args.get("all")
    if every is True:
        return "GROUP BY ALL is not supported; name the grouping columns"
    if every is False and any(isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions):
        # (PostgreSQL's: grouping sets listed twice are grouped once; over plain columns it changes nothing)
        return "GROUP BY DISTINCT over grouping sets is not supported"
    return None


def standard_limits(nodes: list[exp.Expression]) -> None:
    """Give the planner one form of row limit: SQL's ``FETCH FIRST|NEXT [n] ROW[S] ONLY`` is
    ``LIMIT n`` (n defaults to 1; WITH TIES and PERCENT are refused above), and PostgreSQL's
    ``LIMIT ALL`` is no limit (sqlglot reads ALL there as a column name). ``nodes``: the tree's
    Fetch and Limit nodes."""
    for node in nodes:
        if isinstance(node, exp.Fetch):
            count = node.args.get("count") or exp.Literal.number(1)
            node.replace(exp.Limit(expression=count))
        elif isinstance(node, exp.Limit) and _is_all(node.args.get("expression")):
            node.pop()


def _is_all(value: exp.Expression | None) -> bool:
    """Whether ``value`` is the bare word ALL (not a quoted "ALL" or a qualified t.all)."""
    if isinstance(value, exp.Var):
        return value.name.upper() == "ALL"
    return (isinstance(value, exp.Column) and not value.table and isinstance(value.this, exp.Identifier)
            and not value.this.args.get("quoted") and value.name.upper() == "ALL")
