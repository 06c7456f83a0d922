"""Reading one row of a table with exploded columns family by family: `PartialFetch`.

``SELECT tags[3], doc->>'email' FROM t WHERE id = 5`` on a table whose ``tags`` and ``doc`` are
exploded (families 1 and 2) needs neither whole value: one ``get_many`` reads the family-0 key
(the row's sentinel: does row 5 exist, and its packed columns) and the two element keys
``/Table/104/1/5/1/3`` and ``/Table/104/1/5/2/"email"``. The column then holds a *partial* value
that answers exactly those accesses: ``ARRAY[NULL, NULL, <element 3>]`` and
``{"email": <element>}``. The planner builds a `PartialFetch` only when every use of such a
column in the query is an element access with a constant key (plan/element_uses.py), so the
elements that are missing from the partial value are never looked at; an exploded column the
query does not mention is not read at all, and one it reads whole is one prefix scan.

``sized`` (an UPDATE that only assigns elements, plan/element_updates.py): the header key is
read too; a partial ARRAY has the stored length, so that assigning past the end extends the
real array and `ExplodedColumn.changes` sees only the assigned elements differ; a partial JSONB
object carries the stored attribute count (`PartialObject`); a JSONB array or scalar is read
whole.
"""

from __future__ import annotations

from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb, sorted_object
from sqlkv.encoding.pretty import pretty_key
from sqlkv.errors import CorruptionError
from sqlkv.storage.kv import prefix_end


class PartialFetch:
    """The point read of one row (by its primary-key prefix) described in the module docstring."""

    def __init__(self, codec, needed: set[int] | None, elements: dict[int, list[Any]],
                 sized: bool = False) -> None:
        self.codec = codec
        self.sized = sized  # read each element-read column's header: its partial value has the stored length
        self.packed = [fam for fam in codec.families if fam.id not in codec.exploded]
        self.element_reads: list[tuple[Any, list[Any]]] = []  # (ExplodedColumn, element keys)
        self.whole = []  # exploded columns read with a prefix scan
        for col in codec.exploded.values():
            if col.position is None or (needed is not None and col.position not in needed):
                continue  # dropped, or not mentioned by the query: not read at all
            if col.position in elements:
                self.element_reads.append((col, sorted(set(elements[col.position]), key=repr)))
            else:
                self.whole.append(col)

    def keys(self, base: bytes) -> list[bytes]:
        """Every key the read gets: the packed families', then the elements'."""
        out = [base + fam.suffix for fam in self.packed]
        for col, elements in self.element_reads:
            if self.sized:
                out.append(base + col.suffix)
            out.extend(col.element_key(base, e) for e in elements)
        return out

    def fetch(self, reader, base: bytes, decoder=None) -> tuple | None:
        """The row at primary-key prefix ``base`` (None: no such row). ``decoder`` is ignored:
        the row is built here, with every column the query reads."""
        codec = self.codec
        values = reader.get_many(self.keys(base))
        if values[0] is None:
            return None  # family 0 is every row's sentinel
        row = codec._start_row(base + codec.fam0_suffix)
        for value in values[:len(self.packed)]:
            if value is not None:
                codec._fill(row, value)
        at = len(self.packed)
        for col, elements in self.element_reads:
            header = None
            if self.sized:
                header, at = values[at], at + 1
            found = {e: col.element_value(v) for e, v in zip(elements, values[at:at + len(elements)]) if v is not None}
            at += len(elements)
            if not self.sized:
                row[col.position] = _partial(col.jsonb, found)
            elif header is not None:
                sized = _sized(col, header, found, base)
                # a document that is no object: jsonb_set's key means something else, read it whole
                row[col.position] = sized if sized is not None else _whole(reader, base, col)
        for col in self.whole:
            row[col.position] = _whole(reader, base, col)
        out = tuple(row)
        return codec.complete(out) if codec.virtual else out

    def describe(self, base: bytes | None) -> str:
        """EXPLAIN's list of the element keys read (for the first span's row when known)."""
        parts = []
        for col, elements in self.element_reads:
            if self.sized:
                parts.append(pretty_key(base + col.suffix) if base is not None else f"{col.name} length")
            for e in elements:
                parts.append(pretty_key(col.element_key(base, e)) if base is not None else f"{col.name}/{e!r}")
        return "elements: " + ", ".join(parts)


def _whole(reader, base: bytes, col) -> Any:
    """One exploded value read whole: one prefix scan (None: a NULL value, no keys)."""
    start = base + col.suffix
    pairs = [(k[len(start):], v) for k, v in reader.scan(start, prefix_end(start))]
    if not pairs:
        return None
    header = pairs[0][1] if not pairs[0][0] else None
    return col.assemble(header, [p for p in pairs if p[0]], start)


class PartialObject(dict):
    """The attributes of a JSONB object an element UPDATE read, and how many the stored object
    has (`ExplodedColumn.changes` keeps the header's count right from it)."""

    stored_count: int


def _sized(col, header: bytes, found: dict[Any, Any], base: bytes) -> Any:
    """An ARRAY of the header's length holding only the elements read (NULL elsewhere); a JSONB
    object of only the attributes read (a `PartialObject`), or None when the document is no
    object."""
    head = col.element_value(header)
    if col.jsonb:
        if not (type(head) is list and len(head) == 2 and head[0] == "object" and type(head[1]) is int):
            return None
        tree = PartialObject({k: v.tree for k, v in found.items()})
        tree.stored_count = head[1]
        return Jsonb(tree)
    if type(head) is not int or head < 0 or any(i > head for i in found):
        raise CorruptionError(f'exploded column "{col.name}" at {pretty_key(base + col.suffix)}: '
                              f"header {head!r} does not match the elements present")
    items: list = [None] * head
    for i, v in found.items():
        items[i - 1] = v
    return SqlArray(items)


def _partial(jsonb: bool, found: dict[Any, Any]) -> Any:
    """A value holding only the elements read (see the module docstring)."""
    if not jsonb:
        items: list = [None] * max(found, default=0)
        for i, v in found.items():
            items[i - 1] = v
        return SqlArray(items)
    trees = {k: v.tree for k, v in found.items()}
    if all(type(k) is int for k in trees) and trees:
        seq: list = [None] * (max(trees) + 1)
        for i, t in trees.items():
            seq[i] = t
        return Jsonb(seq)
    return Jsonb(sorted_object(trees))
