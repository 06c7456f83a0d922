"""GROUP BY ROLLUP / CUBE / GROUPING SETS: the grouping sets a GROUP BY clause stands for.

``GROUP BY region, ROLLUP (year, month)`` is the cross product of its items' sets:
``region`` is always grouped, ROLLUP contributes ``(year, month)``, ``(year)``, ``()``; so the
query aggregates by ``(region, year, month)``, ``(region, year)`` and ``(region)``. The
aggregation operator (`GroupingSetsAggregate`) computes every key once per input row and feeds
each set's group, the keys outside the set read as NULL (PostgreSQL).
"""

from __future__ import annotations

from itertools import combinations

from sqlglot import exp

from sqlkv.errors import NotSupportedError, ProgrammingError

MAX_SETS = 4096  # CUBE of 12 expressions; more is almost surely a mistake


def has_grouping_sets(group_items: list[exp.Expression]) -> bool:
    return any(isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)) for g in group_items)


def expand_grouping(group_items: list[exp.Expression]) -> tuple[list[exp.Expression], list[tuple[int, ...]]]:
    """(the distinct key expressions, each grouping set as positions into them)."""
    keys: list[exp.Expression] = []

    def pos(node: exp.Expression) -> int:
        for i, k in enumerate(keys):
            if k == node:
                return i
        keys.append(node)
        return len(keys) - 1

    product: list[frozenset[int]] = [frozenset()]
    for item in group_items:
        choices = [frozenset(pos(e) for e in s) for s in _item_sets(item)]
        product = [a | b for a in product for b in choices]
        if len(product) > MAX_SETS:
            raise ProgrammingError(f"too many grouping sets (more than {MAX_SETS})")
    sets = [tuple(sorted(s)) for s in product]
    return keys, sets


def _item_sets(item: exp.Expression) -> list[list[exp.Expression]]:
    if isinstance(item, exp.Rollup):
        elems = [_members(e) for e in item.expressions]
        return [sum(elems[:n], []) for n in range(len(elems), -1, -1)]
    if isinstance(item, exp.Cube):
        elems = [_members(e) for e in item.expressions]
        out = []
        for n in range(len(elems), -1, -1):
            for combo in combinations(elems, n):
                out.append(sum(combo, []))
        return out
    if isinstance(item, exp.GroupingSets):
        out = []
        for e in item.expressions:
            if isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                out.extend(_item_sets(e))
            else:
                out.append(_members(e))
        return out
    return [[item]]


def _members(node: exp.Expression) -> list[exp.Expression]:
    """``(a, b)`` -> [a, b]; ``(a)`` -> [a]; ``()`` -> []; ``a`` -> [a]."""
    if isinstance(node, exp.Tuple):
        return list(node.expressions)
    if isinstance(node, exp.Paren):
        return [node.this]
    if isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets)):
        raise NotSupportedError("ROLLUP/CUBE nested inside ROLLUP or CUBE is not supported")
    return [node]
