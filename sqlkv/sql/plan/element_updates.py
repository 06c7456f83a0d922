"""Which exploded columns an UPDATE only assigns element by element, so need not read whole.

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
- no RETURNING clause and no ``*`` anywhere (they could show the whole value), and no SET of a
  primary-key column (a row whose key changes is deleted and written again whole);
- no index (btree, unique, inverted, partial predicate, STORING), CHECK constraint, generated
  column (expression indexes are generated columns) or foreign key involves it: their
  maintenance needs the whole old value. (An inverted index would need only the old element and
  whether it occurs elsewhere; not done: such columns keep the whole read.)

A JSONB column qualifies the same way when every mention is ``SET doc = jsonb_set(doc, '{k}',
v [, create_missing])`` with one constant top-level key: the read gets the header and attribute
``k``; when the header says object, the old value is that one attribute (a `PartialObject`
carrying the stored attribute count, so that `ExplodedColumn.changes` keeps the header's count
right when ``k`` is added); an array or scalar document (where ``k`` means something else) is
read whole for that row. An inverted index on the document does not force the whole read:
its entries are the paths of the document, each under one top-level key, so the entries that
change are those under ``k``, computed from the old and new attribute alone
(rowstore/inverted.py `value_elements`: a partial object that read no attribute contributes
no entry, not the empty object's).

An exploded column the UPDATE does not mention at all (under the same conditions) is not read:
the new row keeps the old (unread) value by identity, and the writer leaves its keys alone.
"""

from __future__ import annotations

import re

from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import DataError
from sqlkv.sql.expr.jsonb_ops import parse_text_array
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


def _jsonb_set_key(value: exp.Expression, target: exp.Column) -> str | None:
    """The key of ``jsonb_set(<target>, '{k}', ...)``: one top-level key, constant; else None."""
    if not isinstance(value, exp.Anonymous) or str(value.this).lower() != "jsonb_set" \
            or not 3 <= len(value.expressions) <= 4:
        return None
    doc, path = value.expressions[0], value.expressions[1]
    if not isinstance(doc, exp.Column) or doc.name.lower() != target.name.lower() \
            or not isinstance(path, exp.Literal) or not path.is_string:
        return None
    try:
        keys = parse_text_array(path.this, "jsonb_set()")
    except DataError:
        return None  # the statement reports it, reading the whole value
    return keys[0] if len(keys) == 1 and isinstance(keys[0], str) else None


def _assigned_key(column: exp.Column, update: exp.Update) -> str | None:
    """The key of ``SET doc = jsonb_set(doc, '{k}', ...)`` when ``column`` is either ``doc``."""
    parent = column.parent
    if isinstance(parent, exp.EQ) and parent.parent is update and parent.this is column:
        eq = parent  # the SET target
    elif isinstance(parent, exp.Anonymous) and parent.expressions and parent.expressions[0] is column \
            and isinstance(parent.parent, exp.EQ) and parent.parent.expression is parent \
            and parent.parent.parent is update:
        eq = parent.parent  # jsonb_set's first argument
    else:
        return None
    if not isinstance(eq.this, exp.Column) or eq.this.name.lower() != column.name.lower():
        return None
    return _jsonb_set_key(eq.expression, eq.this)


def _mentions(text: str | None, name: str) -> bool:
    """Whether a stored SQL text (CHECK, generated column, index predicate) may name the column."""
    return text is not None and re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text, re.IGNORECASE) is not None


def _needs_whole_value(table: TableDescriptor, column_id: int, name: str, jsonb: bool) -> bool:
    """Whether an index, CHECK, generated column or foreign key involves the column (an
    inverted index on a JSONB column does not: see the module docstring)."""
    for idx in table.indexes:
        if idx.inverted and jsonb:
            continue
        if column_id in idx.column_ids or column_id in idx.storing or _mentions(idx.predicate, name):
            return True
    if any(_mentions(c.expr_sql, name) for c in table.checks):
        return True
    if any(_mentions(c.computed, name) for c in table.columns):
        return True
    return any(column_id in fk.column_ids for fk in table.foreign_keys)


def _moves_rows(update: exp.Update, table: TableDescriptor) -> bool:
    """Whether the UPDATE may set a primary-key column: a moved row is rewritten whole."""
    key = {table.columns[table.column_index(i)].name.lower() for i in table.primary_index.column_ids}
    for eq in update.expressions:
        target = eq.this if isinstance(eq, exp.EQ) else eq
        if any(c.name.lower() in key for c in target.find_all(exp.Column)) or not isinstance(eq, exp.EQ):
            return True
    return False


def update_reads(update: exp.Update, table: TableDescriptor) -> tuple[dict[int, list], set[int]]:
    """What a primary-key point read for ``update`` must read of the exploded columns:
    (row position -> assigned indexes or keys, for each column the UPDATE only assigns element
    by element; positions of the exploded columns it does not need at all -- never mentioned, and
    no index, CHECK, generated column or foreign key involves them). Both empty when the
    statement has RETURNING or a ``*``."""
    if update.args.get("returning") is not None or update.find(exp.Star) is not None or _moves_rows(update, table):
        return {}, set()
    candidates = {name: (pos, col.type.element is not None)  # (position, ARRAY rather than JSONB)
                  for name, (pos, col) in exploded_by_name(table).items()
                  if not _needs_whole_value(table, col.id, col.name, col.type.kind == "JSONB")}
    out: dict[int, list] = {}
    whole: set[int] = set()
    for node in update.find_all(exp.Column):
        hit = candidates.get(node.name.lower())
        if hit is None:
            continue
        key = _assigned_index(node, update) if hit[1] else _assigned_key(node, update)
        if key is None:
            whole.add(hit[0])
        elif not isinstance(node.parent, exp.EQ):  # the SET target itself adds no key
            out.setdefault(hit[0], []).append(key)
    unread = {pos for pos, _ in candidates.values() if pos not in whole and pos not in out}
    return {pos: keys for pos, keys in out.items() if pos not in whole}, unread
