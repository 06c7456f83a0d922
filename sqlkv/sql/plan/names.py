"""Output names, ``*`` expansion and AST helpers shared by the SELECT planner modules.

For ``SELECT u.*, name AS n, age + 1 FROM users u`` the select list becomes one `SelectItem` per
output column: ``u.*`` expands to the visible columns of relation ``u`` (items that read a row
position directly), ``name AS n`` is named ``n`` and ``age + 1`` is named by its SQL text, as
SQLite and PostgreSQL name unaliased expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.context import Column
from sqlkv.sql.expr.env import column_parts
from sqlkv.sql.expr.rows import split_row_equality

# AST nodes that open a new query level: name resolution and aggregate search stop there.
QUERY_NODES = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery, exp.Values)


@dataclass
class Relation:
    """One FROM item as the planner sees it: its alias and where its columns sit in a row."""

    alias: str
    columns: list[Column]
    offset: int = 0  # position of its first column in the joined row


@dataclass
class SelectItem:
    """One output column: an expression to compile, or a row position (from ``*``)."""

    name: str
    node: exp.Expression | None = None
    index: int | None = None
    table: str | None = None
    display: exp.Expression | None = None  # the user's expression, for EXPLAIN, after rewrites


class OrderTerm:
    """One ORDER BY term: a select-list position (``item``) or an expression, and its direction."""

    __slots__ = ("item", "node", "desc", "nulls_first", "text")

    def __init__(self, item: int | None, node: exp.Expression | None, desc: bool,
                 nulls_first: bool | None, text: str) -> None:
        self.item = item
        self.node = node
        self.desc = desc
        self.nulls_first = nulls_first
        self.text = text


class LazySql:
    """EXPLAIN text generated only when printed (sqlglot's SQL generation is costly per plan)."""

    __slots__ = ("nodes", "sep")

    def __init__(self, nodes: list[exp.Expression] | exp.Expression, sep: str = " AND ") -> None:
        self.nodes = nodes if isinstance(nodes, list) else [nodes]
        self.sep = sep

    def __str__(self) -> str:
        return self.sep.join(n if isinstance(n, str) else n.sql() for n in self.nodes)


def ident_name(node: exp.Expression | str | None) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    if isinstance(node, exp.Identifier):
        return node.name
    return node.name


def output_name(node: exp.Expression) -> str:
    """The name a select-list expression gets: alias, else column name, else its SQL text."""
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        return column_parts(node)[0]
    if "source_text" in node.meta:  # the outer select list, as typed (sqlkv.sql.headers)
        return node.meta["source_text"]
    if node.find(exp.HexString):  # the default dialect prints x'ff' as 255 (and fails on x'')
        return node.sql(dialect="sqlite")
    return node.sql()


def strip_alias(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def expand_select_list(nodes: list[exp.Expression], relations: list[Relation]) -> list[SelectItem]:
    """Select list -> items, expanding ``*`` and ``t.*`` over the relations in FROM order."""
    items: list[SelectItem] = []
    for node in nodes:
        if isinstance(node, exp.Star):
            if not relations:
                raise ProgrammingError("SELECT * with no tables specified is not valid")
            for rel in relations:
                items.extend(_relation_items(rel))
        elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            alias = node.table
            rel = next((r for r in relations if r.alias.lower() == alias.lower()), None)
            if rel is None:
                raise ProgrammingError(f'missing FROM-clause entry for table "{alias}"')
            items.extend(_relation_items(rel))
        else:
            items.append(SelectItem(output_name(node), node=strip_alias(node)))
    return items


def _relation_items(rel: Relation) -> list[SelectItem]:
    return [SelectItem(col.name, index=rel.offset + i, table=col.table)
            for i, col in enumerate(rel.columns) if not col.hidden]


def split_conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """``a AND (b AND c)`` -> ``[a, b, c]``; parentheses around a conjunct are dropped."""
    if node is None:
        return []
    if isinstance(node, exp.Where):
        node = node.this
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return split_conjuncts(node.this) + split_conjuncts(node.expression)
    pairs = split_row_equality(node)
    return pairs if pairs is not None else [node]


def conjunct_key(node: exp.Expression) -> str:
    """A conjunct's SQL with column qualifiers dropped and unquoted names lower-cased."""

    def strip(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column):
            ident = n.this
            name = ident.this if getattr(ident, "quoted", False) else str(n.name).lower()
            return exp.Column(this=exp.Identifier(this=name, quoted=True))
        return n

    return node.transform(strip, copy=True).sql()


@dataclass
class QueryFacts:
    """What one walk of a SELECT (subqueries included) finds, for the planner's later steps."""

    names: dict[str, set[str | None]] | None  # column name -> qualifiers it is named with; None: * used
    windows: bool  # an OVER clause somewhere
    calls: bool  # a function call, FILTER or WITHIN GROUP somewhere: an aggregate is possible


# Nodes with no facts and no children that have any: skipped without a look at their arguments
_LEAVES = frozenset({exp.Identifier, exp.Literal, exp.Placeholder, exp.Null, exp.Boolean, exp.Var})


def query_facts(query: exp.Expression) -> QueryFacts:
    """Column names the query mentions (for index-only scans) and whether it may aggregate or
    window: the planner asks these of every select item, and the answer is no for most queries."""
    names: dict[str, set[str | None]] | None = {}
    windows = calls = False
    stack = [query]
    while stack:  # every node once, in no particular order (cheaper than sqlglot's walk)
        node = stack.pop()
        if type(node) in _LEAVES:
            continue
        if isinstance(node, exp.Column):
            this = node.args.get("this")
            if isinstance(this, exp.Star):
                names = None  # t.*: all columns
            elif names is not None:
                table = node.args.get("table")  # an Identifier's text read directly, else sqlglot's
                table = table.this if type(table) is exp.Identifier else node.table
                name = this.this if type(this) is exp.Identifier else node.name
                names.setdefault(name.lower(), set()).add(table.lower() if table else None)
            continue  # its children are identifiers
        if isinstance(node, (exp.Func, exp.Filter, exp.WithinGroup)):
            calls = calls or not isinstance(node, exp.Connector)  # AND/OR are Funcs to sqlglot
        elif isinstance(node, exp.Window):
            windows = True
        elif isinstance(node, exp.Star):
            if not isinstance(node.parent, exp.Count):
                names = None  # SELECT *: all columns
        elif isinstance(node, exp.Join) and names is not None:
            # JOIN ... USING (a): `a` is read from both sides though no Column node names it.
            for ident in node.args.get("using") or ():
                names.setdefault(ident.name.lower(), set()).add(None)
        for value in node.args.values():
            if value is None:  # most of a clause's arguments are unset
                continue
            if isinstance(value, exp.Expression):
                stack.append(value)
            elif type(value) is list:
                for item in value:
                    if isinstance(item, exp.Expression):
                        stack.append(item)
    return QueryFacts(names, windows, calls)


def plain_query_facts(nodes: list[exp.Expression]) -> QueryFacts:
    """`query_facts` of a SELECT made only of `parse_tree.SHARED_PLAN_NODES` (no call, window,
    join or subquery among them) from the list of its nodes, without a walk of the tree: the
    names of its columns, or None when a ``*`` reads them all."""
    classes = set(map(type, nodes))
    if exp.Star in classes:
        return QueryFacts(None, False, False)
    names: dict[str, set[str | None]] = {}
    column, identifier = exp.Column, exp.Identifier
    for node in nodes:
        if type(node) is column:
            this, table = node.args["this"], node.args.get("table")
            if type(this) is identifier:  # their text read from their arguments, not `.this`
                table = table.args["this"].lower() if table is not None else None  # an Identifier
                names.setdefault(this.args["this"].lower(), set()).add(table)
    return QueryFacts(names, False, False)


def column_refs(node: exp.Expression) -> list[exp.Column]:
    """Column references of ``node`` at this query level (not inside subqueries)."""
    out: list[exp.Column] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            if not isinstance(n.this, exp.Star):
                out.append(n)
            continue
        if n is not node and isinstance(n, QUERY_NODES):
            continue
        stack.extend(n.iter_expressions())
    return out


def refs_or_subquery(node: exp.Expression) -> list[exp.Column] | None:
    """Column references of ``node`` (one walk), or None when it contains a subquery."""
    out: list[exp.Column] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column):
            if not isinstance(n.this, exp.Star):
                out.append(n)
            continue
        if isinstance(n, QUERY_NODES):
            return None
        stack.extend(n.iter_expressions())
    return out


def has_subquery(node: exp.Expression) -> bool:
    return any(isinstance(n, QUERY_NODES) for n in node.walk() if n is not node) or \
        isinstance(node, (exp.Exists, exp.In)) and node.args.get("query") is not None


def int_literal(node: exp.Expression) -> int | None:
    """The value of an integer literal (``ORDER BY 2``), else None."""
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None
