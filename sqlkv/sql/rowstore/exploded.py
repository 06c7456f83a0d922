"""Exploded ARRAY and JSONB columns: a header key plus one KV pair per element.

``CREATE TABLE t (id INT PRIMARY KEY, tags TEXT[], FAMILY f_tags (tags) WITH (layout = exploded))``
(table 104, family 1) stores the row ``(7, ARRAY['a', NULL, 'c'])`` as

    /Table/104/1/7/0      -> {}          family 0: the row's sentinel (and its other columns)
    /Table/104/1/7/1      -> 3           the header: the array's length
    /Table/104/1/7/1/1    -> 'a'         one pair per element, keyed by its 1-based index
    /Table/104/1/7/1/2    -> nil         (a NULL element is present, with a nil value)
    /Table/104/1/7/1/3    -> 'c'

A JSONB column's header is ``["object", n]``, ``["array", n]`` or ``["scalar", value]`` (a
scalar document lives whole in its header); an object has one pair per attribute keyed by its
name, an array one per position keyed 0, 1, ... (as ``->`` counts). Nested values are stored
whole as the element's value (a JSONB ext value). Element keys use the order-preserving key
codec, so an array's elements scan in order and an object's attributes sorted by name; element
values use the row-value codec (`encode_single`). A NULL column has no keys at all.

Reading the whole value is one prefix scan of ``/<pk>/<family>``; one element is one get of its
key (`element_key`); an UPDATE writes only the elements that changed, the header when the
length changes, and deletes the elements that went away (`ExplodedColumn.changes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb, sorted_object
from sqlkv.encoding.keys import decode_key, decode_uvarint, encode_key, family_suffix
from sqlkv.encoding.pretty import pretty_key
from sqlkv.encoding.values import decode_single, encode_single
from sqlkv.errors import CorruptionError, ProgrammingError
from sqlkv.storage.kv import prefix_end

KV = tuple[bytes, "bytes | None"]


def check_exploded_family(table: TableDescriptor, family: str, columns: list[str]) -> None:
    """Refuse an exploded family that is not exactly one stored ARRAY or JSONB non-key column."""
    if len(columns) != 1:
        raise ProgrammingError(f'exploded family "{family}" must hold exactly one ARRAY or JSONB column '
                               f"(it lists {len(columns)})")
    col = table.column(columns[0])
    if col.id in table.primary_index.column_ids:
        raise ProgrammingError(f'column "{col.name}" is part of the primary key: it cannot be in exploded '
                               f'family "{family}"')
    if col.type.element is None and col.type.kind != "JSONB":
        raise ProgrammingError(f'exploded family "{family}": column "{col.name}" is {col.type.sql()}, '
                               "only ARRAY and JSONB columns can be exploded")
    if col.computed is not None and col.virtual:
        raise ProgrammingError(f'exploded family "{family}": column "{col.name}" is VIRTUAL (never stored)')


@dataclass
class ExplodedColumn:
    """The one column of an exploded family: how its value becomes keys and back."""

    family_id: int
    suffix: bytes
    position: int | None  # row position; None once the column is dropped (its keys are skipped)
    name: str
    jsonb: bool

    # -- value -> pairs -------------------------------------------------------------------

    def parts(self, value: Any) -> tuple[bytes, list[tuple[bytes, bytes]]]:
        """The header value and the (element key, element value) pairs of a non-NULL value."""
        if not self.jsonb:
            items = value.items
            keys = index_keys(len(items))
            return encode_single(len(items)), [(keys[i], encode_single(v)) for i, v in enumerate(items, 1)]
        tree = value.tree
        if isinstance(tree, dict):
            return (encode_single(["object", len(tree)]),
                    [(encode_key([k]), encode_single(Jsonb(v))) for k, v in tree.items()])
        if isinstance(tree, list):
            return (encode_single(["array", len(tree)]),
                    [(encode_key([i]), encode_single(Jsonb(v))) for i, v in enumerate(tree)])
        return encode_single(["scalar", value]), []

    def kvs(self, base: bytes, value: Any) -> list[KV]:
        """Every pair of the value of the row whose key prefix is ``base`` (NULL: the header,
        marked absent)."""
        head = base + self.suffix
        if value is None:
            return [(head, None)]
        header, elements = self.parts(value)
        return [(head, header)] + [(head + k, v) for k, v in elements]

    def changes(self, base: bytes, old: Any, new: Any) -> list[KV]:
        """The puts (value) and deletes (None) that turn the stored ``old`` into ``new``: only the
        elements whose encoding differs, the header when it differs, removed elements deleted."""
        head = base + self.suffix
        if new is None:
            return [] if old is None else [(k, None) for k, _v in self.kvs(base, old)]
        if old is None:
            return self.kvs(base, new)
        if not self.jsonb:
            return _array_changes(head, old.items, new.items)
        old_header, old_elements = self.parts(old)
        new_header, new_elements = self.parts(new)
        stored = getattr(old.tree, "stored_count", None)
        if stored is not None and isinstance(new.tree, dict):
            # old is the part of an object an element UPDATE read (exploded_reads.PartialObject)
            old_header = encode_single(["object", stored])
            new_header = encode_single(["object", stored + len(new.tree) - len(old.tree)])
        out: list[KV] = [] if old_header == new_header else [(head, new_header)]
        before = dict(old_elements)
        for k, v in new_elements:
            if before.pop(k, None) != v:
                out.append((head + k, v))
        out.extend((head + k, None) for k in before)
        return out

    def element_key(self, base: bytes, element: Any) -> bytes:
        """The key of one element: an array's 1-based index, an attribute name, or a JSONB
        array's 0-based position."""
        return base + self.suffix + encode_key([element])

    # -- pairs -> value -------------------------------------------------------------------

    def problem(self, header: bytes | None, elements: list[tuple[bytes, bytes]]) -> str | None:
        """What is wrong with the stored pairs of one value (None: they are whole)."""
        if header is None:
            return f"{len(elements)} element key(s) without a header"
        head = decode_single(header)
        if not self.jsonb and type(head) is int and 0 <= head and len(elements) == head \
                and [k for k, _v in elements] == index_keys(head)[1:]:
            return None  # the common case, without decoding each key
        keys = [_element_of(k) for k, _v in elements]
        if not self.jsonb:
            if type(head) is not int or head < 0:
                return f"bad array header {head!r}"
            expected: list = list(range(1, head + 1))
        elif type(head) is list and len(head) == 2 and head[0] == "scalar":
            expected = []
        elif type(head) is list and len(head) == 2 and head[0] in ("object", "array") and type(head[1]) is int:
            if head[0] == "array":
                expected = list(range(head[1]))
            elif len(keys) != head[1] or not all(type(k) is str for k in keys):
                return _count_problem(head[1], keys, "attribute")
            else:
                expected = keys
        else:
            return f"bad JSONB header {head!r}"
        if keys != expected:
            return _count_problem(len(expected), keys, "element", expected)
        return None

    def assemble(self, header: bytes | None, elements: list[tuple[bytes, bytes]], where: bytes) -> Any:
        """The value of one row from its pairs (elements in any order); CorruptionError naming
        the header key when they are not whole."""
        elements = sorted(elements)
        problem = self.problem(header, elements)
        if problem is not None:
            raise CorruptionError(f'exploded column "{self.name}" at {pretty_key(where)}: {problem}')
        if not self.jsonb:
            return SqlArray([decode_single(v) for _k, v in elements])
        kind, payload = decode_single(header)  # type: ignore[misc]
        if kind == "scalar":
            return Jsonb(_tree(payload))
        trees = [_tree(decode_single(v)) for _k, v in elements]
        if kind == "array":
            return Jsonb(trees)
        return Jsonb(sorted_object({_element_of(k): t for (k, _v), t in zip(elements, trees)}))

    def element_value(self, data: bytes | None) -> Any:
        """The SQL value of one element read by its key (None: no such element)."""
        if data is None:
            return None
        return decode_single(data)


_INDEX_KEYS: list[bytes] = [encode_key([0])]


def index_keys(n: int) -> list[bytes]:
    """The element keys of array indexes 0..n (a shared list: read it, never change it)."""
    while len(_INDEX_KEYS) <= n:
        _INDEX_KEYS.append(encode_key([len(_INDEX_KEYS)]))
    return _INDEX_KEYS if len(_INDEX_KEYS) == n + 1 else _INDEX_KEYS[:n + 1]


# element types whose equal values have one encoding (not floats: 0.0 == -0.0; not Decimal:
# 1.0 == 1.00; not datetimes: equal instants in two time zones)
_EXACT_TYPES = frozenset({int, str, bool, bytes})


def _same(a: Any, b: Any) -> bool:
    """Whether two array elements certainly encode alike (otherwise their encodings are compared)."""
    return a is b or (type(a) is type(b) and type(a) in _EXACT_TYPES and a == b)


def _array_changes(head: bytes, old: tuple, new: tuple) -> list[KV]:
    """`ExplodedColumn.changes` for arrays: elements compared as values, encoded only when they differ."""
    keys = index_keys(max(len(old), len(new)))
    out: list[KV] = [] if len(old) == len(new) else [(head, encode_single(len(new)))]
    n_old = len(old)
    for i, v in enumerate(new):
        if i < n_old and old[i] is v:
            continue  # the common case (an element not assigned, or unread: both NULL), without a call
        if i >= n_old or not _same(old[i], v):
            encoded = encode_single(v)
            if i >= n_old or encode_single(old[i]) != encoded:
                out.append((head + keys[i + 1], encoded))
    out.extend((head + keys[i + 1], None) for i in range(len(new), len(old)))
    return out


def _tree(value: Any) -> Any:
    if not isinstance(value, Jsonb):
        raise CorruptionError(f"exploded JSONB element is not a JSONB value: {value!r}")
    return value.tree


def _element_of(key: bytes) -> Any:
    values, end = decode_key(key, 1)
    if end != len(key):
        raise CorruptionError(f"exploded element key {key.hex()} has trailing bytes")
    return values[0]


def _count_problem(want: int, keys: list, what: str, expected: list | None = None) -> str:
    text = f"header says {want} {what}(s), {len(keys)} present"
    if expected is not None:
        missing = [k for k in expected if k not in set(keys)]
        extra = [k for k in keys if k not in set(expected)]
        if missing:
            text += f"; missing {', '.join(map(repr, missing[:5]))}"
        if extra:
            text += f"; extra {', '.join(map(repr, extra[:5]))}"
    return text


def exploded_columns(table: TableDescriptor) -> dict[int, ExplodedColumn]:
    """The exploded families of a table by family id (empty for almost every table)."""
    out = {}
    for fam in table.families:
        if not fam.exploded:
            continue
        position = table.column_index(fam.column_ids[0]) if fam.column_ids else None
        col = table.columns[position] if position is not None else None
        out[fam.id] = ExplodedColumn(fam.id, family_suffix(fam.id), position, col.name if col else fam.name,
                                     col is not None and col.type.kind == "JSONB")
    return out


# (column name, header key, what is wrong): an exploded value that is not whole, for CHECK DATABASE
Broken = tuple[str, bytes, str]


def exploded_rows(codec, pairs: Iterable[tuple[bytes, bytes]], report: list[Broken] | None = None
                  ) -> Iterator[tuple]:
    """Rows of a table with exploded columns from its primary-index pairs (either scan
    direction): a row's pairs are those sharing its encoded primary key. With ``report``,
    a value that is not whole is reported there (and read as NULL) instead of raising."""
    plen, npk, desc = len(codec.prefix), codec.npk, codec.pk_desc
    exploded: dict[int, ExplodedColumn] = codec.exploded
    current: bytes | None = None
    row: list = []
    parts: dict[int, list[tuple[bytes, bytes]]] = {}
    for key, value in pairs:
        if current is None or not key.startswith(current):  # prefix-free keys: same start, same row
            if current is not None:
                yield _finish(exploded, row, current, parts, report)
            end = decode_key(key, npk, desc, plen)[1]
            current = key[:end]
            row = codec._start_row(key)
            parts = {}
        family, off = decode_uvarint(key, len(current))
        if family in exploded:
            parts.setdefault(family, []).append((key[off:], value))
        elif off != len(key):
            raise CorruptionError(f"primary index key {pretty_key(key)} has bytes after its family id")
        else:
            codec._fill(row, value)
    if current is not None:
        yield _finish(exploded, row, current, parts, report)


def _finish(exploded: dict[int, ExplodedColumn], row: list, base: bytes,
            parts: dict[int, list[tuple[bytes, bytes]]], report: list[Broken] | None) -> tuple:
    for family, pairs in parts.items():
        col = exploded[family]
        if col.position is None:
            continue  # a dropped column: its keys stay, ignored
        header = next((v for k, v in pairs if not k), None)
        elements = sorted((k, v) for k, v in pairs if k)
        if report is not None:
            problem = col.problem(header, elements)
            if problem is not None:
                report.append((col.name, base + col.suffix, problem))
                continue  # read as NULL
        row[col.position] = col.assemble(header, elements, base + col.suffix)
    return tuple(row)


def delete_family_keys(txn, codec, family_id: int) -> None:
    """Delete every key of one exploded family (ALTER TABLE DROP COLUMN of its column)."""
    plen, npk, desc = len(codec.prefix), codec.npk, codec.pk_desc
    doomed = []
    for key, _value in txn.scan(codec.prefix, prefix_end(codec.prefix)):
        end = decode_key(key, npk, desc, plen)[1]
        if decode_uvarint(key, end)[0] == family_id:
            doomed.append(key)
    for key in doomed:
        txn.delete(key)
