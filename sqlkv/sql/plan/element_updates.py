"""Which exploded ARRAY columns an UPDATE only assigns element by element, so need not read whole.

``UPDATE t SET tags[3] = 'x' WHERE id = 7`` on an exploded ``tags`` needs of the old value only
its length (the header key: assigning past the end extends the array with NULLs and changes the
length) -- not its elements. When the row is found by primary key, the read is then one
``get_many`` of the row's packed families, the header and the assigned elements
(rowstore/exploded_reads.py, ``sized``), and the old value is an array of the stored length
whose unread elements are NULL; the new value differs from it only at the assigned elements, so
`ExplodedColumn.changes` writes just those (and the header when the length changes).

That partial old value must never be seen by anything else, so the column qualifies only when:

- every mention of it in the statement is the target of ``SET col[<integer constant>] = ...``
  (not in WHERE, RETURNING, a SET value, a subquery);
- no RETURNING clause and no ``*`` anywhere (they could show the whole value);
- no index (btree, unique, inverted, partial predicate, STORING), CHECK constraint, generated
  column (expression indexes are generated columns) or foreign key involves it: their
  maintenance needs the whole old value. (An inverted index would need only the old element and
  whether it occurs elsewhere; not done: such columns keep the whole read.)

JSONB columns (``SET doc = jsonb_set(doc, '{k}', v)``) keep the whole read too: the header's
attribute count cannot be kept right from a partial object without carrying the stored count
through the UPDATE.

An exploded column the UPDATE does not mention at all (under the same conditions) is not read:
the new row keeps the old (unread) value by identity, and the writer leaves its keys alone.
"""

from __future__ import annotations

import re

from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.sql.plan.element_uses import exploded_by_name


def _constant_index(node: exp.Expression) -> int | None:
    """The positive integer constant of a subscript (``3``, ``(3)``), else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = int(node.this)
        except ValueError:
            return None
        return value if value >= 1 else None
    return None


def _assigned_index(column: exp.Column, update: exp.Update) -> int | None:
    """The index of ``SET col[i] = ...`` when ``column`` is that target, else None."""
    bracket = column.parent
    if not isinstance(bracket, exp.Bracket) or bracket.this is not column or len(bracket.expressions) != 1:
        return None
    eq = bracket.parent
    if not isinstance(eq, exp.EQ) or eq.this is not bracket or eq.parent is not update:
        return None
    return _constant_index(bracket.expressions[0])


def _mentions(text: str | None, name: str) -> bool:
    """Whether a stored SQL text (CHECK, generated column, index predicate) may name the column."""
    return text is not None and re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text, re.IGNORECASE) is not None


def _needs_whole_value(table: TableDescriptor, column_id: int, name: str) -> bool:
    """Whether an index, CHECK, generated column or foreign key involves the column."""
    for idx in table.indexes:
        if column_id in idx.column_ids or column_id in idx.storing or _mentions(idx.predicate, name):
            return True
    if any(_mentions(c.expr_sql, name) for c in table.checks):
        return True
    if any(_mentions(c.computed, name) for c in table.columns):
        return True
    return any(column_id in fk.column_ids for fk in table.foreign_keys)


def update_reads(update: exp.Update, table: TableDescriptor) -> tuple[dict[int, list[int]], set[int]]:
    """What a primary-key point read for ``update`` must read of the exploded columns:
    (row position -> assigned indexes, for each ARRAY column the UPDATE only assigns element by
    element; positions of the exploded columns it does not need at all -- never mentioned, and
    no index, CHECK, generated column or foreign key involves them). Both empty when the
    statement has RETURNING or a ``*``."""
    if update.args.get("returning") is not None or update.find(exp.Star) is not None:
        return {}, set()
    candidates = {name: (pos, col.type.element is not None)  # (position, may be assigned by element)
                  for name, (pos, col) in exploded_by_name(table).items()
                  if not _needs_whole_value(table, col.id, col.name)}
    out: dict[int, list[int]] = {}
    whole: set[int] = set()
    for node in update.find_all(exp.Column):
        hit = candidates.get(node.name.lower())
        if hit is None:
            continue
        index = _assigned_index(node, update) if hit[1] else None
        if index is None:
            whole.add(hit[0])
        else:
            out.setdefault(hit[0], []).append(index)
    unread = {pos for pos, _ in candidates.values() if pos not in whole and pos not in out}
    return {pos: keys for pos, keys in out.items() if pos not in whole}, unread
