"""Which exploded columns a query reads only element by element, and which elements.

``SELECT tags[3], doc->>'email' FROM t WHERE id = 5``: every mention of ``tags`` is a subscript
with a constant index and every mention of ``doc`` a ``->``/``->>`` with a constant key, so a
point read of row 5 can get just those element keys (rowstore/exploded_reads.py) instead of
scanning both values. One other use of a column (``cardinality(tags)``, ``doc @> ...``,
``tags[i]`` with ``i`` not a constant) and that column is read whole.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.catalog.descriptors import ColumnDescriptor, TableDescriptor

def _unparen_up(node: exp.Expression) -> exp.Expression:
    """The outermost of the parentheses around ``node`` (``((doc)) -> 'a'`` reads doc)."""
    while isinstance(node.parent, exp.Paren):
        node = node.parent
    return node


def _constant_key(node: exp.Expression | None) -> Any:
    """The constant of ``'email'``, ``('email')``, ``3`` or a JSON path of one key/subscript; None otherwise."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        try:
            return int(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.JSONPath) and len(node.expressions) == 2:
        step = node.expressions[1]
        if isinstance(step, exp.JSONPathKey) and isinstance(step.this, str):
            return step.this
        if isinstance(step, exp.JSONPathSubscript) and isinstance(step.this, int):
            return step.this
    return None


def _element_of(column: exp.Column, jsonb: bool) -> Any:
    """The constant element key ``column`` is accessed with, or None."""
    outer = _unparen_up(column)
    parent = outer.parent
    if jsonb and isinstance(parent, (exp.JSONExtract, exp.JSONExtractScalar)) and parent.this is outer:
        key = _constant_key(parent.expression)
        return key if isinstance(key, str) or (type(key) is int and key >= 0) else None
    if not jsonb and isinstance(parent, exp.Bracket) and parent.this is outer and len(parent.expressions) == 1:
        key = _constant_key(parent.expressions[0])
        return key if type(key) is int else None
    return None


def exploded_by_name(table: TableDescriptor) -> dict[str, tuple[int, ColumnDescriptor]]:
    """Lower-case name -> (row position, column) of each exploded column of ``table``."""
    out = {}
    for fam in table.families:
        if fam.exploded and fam.column_ids:
            pos = table.column_index(fam.column_ids[0])
            out[table.columns[pos].name.lower()] = (pos, table.columns[pos])
    return out


def element_uses(query: exp.Expression, table: TableDescriptor) -> dict[int, list[Any]]:
    """Row position -> constant element keys, for each exploded column of ``table`` that
    ``query`` mentions only in element accesses with constant keys (all strings or all
    integers for a JSONB column)."""
    exploded = {name: (pos, col.type.kind == "JSONB") for name, (pos, col) in exploded_by_name(table).items()}
    if not exploded:
        return {}
    keys: dict[int, list[Any]] = {}
    whole: set[int] = set()
    for node in query.find_all(exp.Column):
        hit = exploded.get(node.name.lower())
        if hit is None:
            continue
        pos, jsonb = hit
        key = _element_of(node, jsonb)
        if key is None:
            whole.add(pos)
        else:
            keys.setdefault(pos, []).append(key)
    return {pos: ks for pos, ks in keys.items() if pos not in whole and len({type(k) for k in ks}) == 1}
