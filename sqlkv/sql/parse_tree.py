"""The parsed tree as the parser's last steps see it.

`parse_statement` walks sqlglot's tree once (`sqlglot_parse` hands the nodes out in ``walk()``
order; the plain parser lists them as it builds them, no walk) and every later step -- refusing ignored clauses, numbering placeholders, the hex,
``to_char`` and INT4 rewrites, spotting set-returning functions -- picks its nodes from that
list with `nodes_of_type` instead of walking the tree again: each walk cost about as much as a
quarter of sqlglot's own parse of a short SELECT. `statement_kind` names the statement.

The parsed tree is cached per SQL text and shared. A SELECT made only of `SHARED_PLAN_NODES`
(columns, literals, parameters, comparisons, AND/OR/NOT, ORDER BY, LIMIT: the planner reads
those and builds new nodes of its own) is planned from that tree itself; any other statement
from a copy (`copy_tree`): sqlglot's ``copy()`` deep-copies every node's position dict through
``copy.deepcopy``, a fifth of the planning time of a short SELECT; their values are plain
numbers and strings, copied here with ``dict()``.
"""

from __future__ import annotations

import sys
from copy import deepcopy
from functools import lru_cache

from sqlglot import exp

from sqlkv.errors import ProgrammingError


# Nodes whose arguments are never nodes (names, literal texts, flags): their arguments are not looked at
_CHILDLESS = frozenset({exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Var})


def walk_nodes(root: exp.Expression) -> list[exp.Expression]:
    """Every node of ``root``'s tree in ``root.walk()`` order (breadth first, children in
    argument order), without the generators of sqlglot's walk: a third of its cost."""
    nodes = [root]
    append = nodes.append
    for node in nodes:  # grows as it goes: a queue that is never popped
        if type(node) in _CHILDLESS:
            continue
        for value in node.args.values():
            if value is None:  # most arguments of a clause are unset
                continue
            if type(value) is list:
                for item in value:
                    if isinstance(item, exp.Expression):
                        append(item)
            elif isinstance(value, exp.Expression):
                append(value)
    return nodes


def nodes_of_type(nodes: list[exp.Expression], kind: type | tuple[type, ...],
                  classes: set[type] | None = None) -> list[exp.Expression]:
    """The nodes of ``kind`` (or a subclass), in their order: what ``find_all(kind)`` gave on
    the tree they were walked from. ``classes``, when given, are the nodes' classes: a kind
    none of them is costs no pass over the nodes."""
    if classes is not None:
        if classes <= SHARED_PLAN_NODES and not _shared_kind(kind):  # a plain SELECT: no pass
            return []
        for cls in classes:
            if issubclass(cls, kind):
                break
        else:
            return []
    return [n for n in nodes if isinstance(n, kind)]


_KINDS: list[tuple[type, str]] = [
    (exp.Insert, "INSERT"),
    (exp.Update, "UPDATE"),
    (exp.Delete, "DELETE"),
    (exp.TruncateTable, "TRUNCATE"),
    (exp.Alter, "ALTER TABLE"),
    (exp.Transaction, "BEGIN"),
    (exp.Commit, "COMMIT"),
]


def statement_kind(ast: exp.Expression) -> str:
    """What `ParsedStatement.kind` calls the statement ``ast`` is ("SELECT", "CREATE TABLE"...)."""
    if isinstance(ast, (exp.Query, exp.Values)):  # a standalone VALUES list is a query too
        return "SELECT"
    if isinstance(ast, exp.Create):
        kind = str(ast.args.get("kind") or "").upper()
        return f"CREATE {kind}"
    if isinstance(ast, exp.Drop):
        kind = str(ast.args.get("kind") or "").upper()
        return f"DROP {kind}"
    if isinstance(ast, exp.Rollback):
        return "ROLLBACK TO" if ast.args.get("savepoint") else "ROLLBACK"
    for cls, kind in _KINDS:
        if isinstance(ast, cls):
            return kind
    raise ProgrammingError(f"unsupported statement: {ast.sql()[:80]}")


# The node classes of a SELECT the planner plans from the shared parsed tree itself, without a
# copy (`ParsedStatement.shared_tree`): planning these reads them and builds new nodes, never
# re-parents or edits one (tests/sql/test_plan_shared_tree.py plans a corpus and compares each
# tree before and after). Subqueries, set operations, functions, casts, USING joins, GROUP BY,
# windows and DML keep planning from a copy: several of their rewrites edit the tree.
SHARED_PLAN_NODES = frozenset({
    exp.Select, exp.From, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Star, exp.Alias,
    exp.Literal, exp.Placeholder, exp.Null, exp.Boolean, exp.Where, exp.Order, exp.Ordered, exp.Limit,
    exp.Offset, exp.Paren, exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE,
    exp.Between, exp.Is, exp.Add, exp.Sub, exp.Mul, exp.Neg,
})


@lru_cache(maxsize=None)
def _shared_kind(kind: type | tuple[type, ...]) -> bool:
    """Whether a node of `SHARED_PLAN_NODES` can be of ``kind`` (the set is fixed: cached)."""
    return any(issubclass(cls, kind) for cls in SHARED_PLAN_NODES)


def plans_shared(ast: exp.Expression, classes: set[type]) -> bool:
    """Whether a statement whose nodes are of ``classes`` is planned from its parsed tree as is."""
    return type(ast) is exp.Select and classes <= SHARED_PLAN_NODES


_ATOMS = frozenset((int, str, bool, float, type(None)))
# sqlglot compiled by mypyc (sqlglotc, the `speedups` extra) copies faster than this module can
_COMPILED_SQLGLOT = not str(getattr(sys.modules[exp.Expression.__module__], "__file__", "")).endswith(".py")


def copy_tree(root: exp.Expression) -> exp.Expression:
    """A copy of ``root``'s tree that shares nothing mutable with it (what ``root.copy()``
    gives, see the module docstring): sqlglot's own copy, except that a node's meta dict and
    comments are copied flat when they hold only plain values, and each child is linked to its
    parent directly (what ``set``/``append`` end up doing, without their calls and the walk
    up the copied ancestors that resets cached hashes: a node with children keeps none, as in
    sqlglot's copy)."""
    if _COMPILED_SQLGLOT:
        return root.copy()
    top = root.__class__()
    stack = [(root, top)]
    while stack:
        node, copy = stack.pop()
        if node.comments is not None:
            copy.comments = list(node.comments)
        if node._type is not None:
            copy._type = deepcopy(node._type)
        meta = node._meta
        if meta:  # an empty one stays None: the ``meta`` property makes a dict when asked
            copy._meta = dict(meta) if _ATOMS.issuperset(map(type, meta.values())) else deepcopy(meta)
        args = {}
        linked = False  # sqlglot's set/append of a child resets the node's cached hash
        for key, value in node.args.items():
            if isinstance(value, exp.Expression):
                child = value.__class__()
                child.parent = copy
                child.arg_key = key
                stack.append((value, child))
                args[key] = child
                linked = True
            elif type(value) is list:
                items = []
                for i, item in enumerate(value):
                    if isinstance(item, exp.Expression):
                        child = item.__class__()
                        child.parent = copy
                        child.arg_key = key
                        child.index = i
                        stack.append((item, child))
                        item = child
                    items.append(item)
                args[key] = items
                linked = linked or bool(items)
            else:
                args[key] = value
        copy.args = args
        if node._hash is not None and not linked:
            copy._hash = node._hash
    return top
