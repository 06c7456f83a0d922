"""ARRAY values: the runtime value `SqlArray`, its PostgreSQL order, and its key encoding.

A SQL array (``INT[]``, ``TEXT[]`` ...; one dimension, NULL elements allowed) is a `SqlArray`
at run time: an immutable, hashable sequence of scalar values, distinct from Python's ``list``
(which the driver converts at its boundary) so that other structured types (JSONB documents
built from ``list``/``dict``) never get mistaken for arrays.

Order (PostgreSQL's ``btarraycmp``): element by element, a NULL element after every non-NULL
one, and when one array is a prefix of the other the shorter sorts first::

    {} < {1} < {1,2} < {1,NULL} < {2} < {NULL}

Key encoding (order-preserving, prefix-free). An array uses the extended-type marker (0x1e
ascending, 0x1f descending; `sqlkv.encoding.extended`) with tag 0x04, then one item per element
and a terminator::

    0x02 <element, ascending key encoding>   a non-NULL element
    0x03                                     a NULL element (after every non-NULL element)
    0x01                                     end of the array (before any element: a prefix
                                             sorts first)

``ARRAY[1, NULL]`` ascending is ``1e 04 02 89 03 01``. Element encodings are prefix-free, so
the bytes compare element by element. A descending array complements every byte after the tag.
Decoding is strict: an unknown item byte, a descending or NULL element after 0x02, a nested
array, elements of different types, or a missing terminator is a CorruptionError.

The row-value (msgpack) form is msgpack ext type 9 (`sqlkv.encoding.values`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlkv.encoding import markers as M
from sqlkv.encoding.varint import corrupt

TAG_ARRAY = 0x04
ITEM_END = 0x01
ITEM_VALUE = 0x02
ITEM_NULL = 0x03
_FLIP = bytes(range(255, -1, -1))


class SqlArray:
    """A one-dimensional SQL array value: immutable, hashable, ordered as PostgreSQL orders arrays."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self.items: tuple = tuple(items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqlArray) and self.items == other.items

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((SqlArray, self.items))

    def __lt__(self, other: SqlArray) -> bool:
        return compare_arrays(self, other) < 0

    def __le__(self, other: SqlArray) -> bool:
        return compare_arrays(self, other) <= 0

    def __gt__(self, other: SqlArray) -> bool:
        return compare_arrays(self, other) > 0

    def __ge__(self, other: SqlArray) -> bool:
        return compare_arrays(self, other) >= 0

    def __repr__(self) -> str:  # as .kv shows a stored row: {tags: ARRAY['a', None]}
        return "ARRAY[" + ", ".join(map(repr, self.items)) + "]"

    def __str__(self) -> str:
        """PostgreSQL's text form ``{1,2,NULL}`` (for messages and the CLI; the SQL layer formats
        elements, so it is imported here rather than at the top, below it in the layers)."""
        from sqlkv.sql.casts import to_text

        return to_text(self)


def compare_arrays(a: SqlArray, b: SqlArray) -> int:
    """-1, 0 or 1: PostgreSQL's array order (NULL elements last, a prefix first)."""
    for x, y in zip(a.items, b.items):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return 1 if x is None else -1
        if x != y:
            return -1 if x < y else 1
    return (len(a.items) > len(b.items)) - (len(a.items) < len(b.items))


# -- key encoding ------------------------------------------------------------------------------


def _body(value: SqlArray) -> bytearray:
    from sqlkv.encoding.keys import append_value  # keys imports this module's encoders

    buf = bytearray()
    for item in value.items:
        if item is None:
            buf.append(ITEM_NULL)
            continue
        if isinstance(item, SqlArray):
            from sqlkv.errors import NotSupportedError

            raise NotSupportedError("multi-dimensional arrays are not supported")
        buf.append(ITEM_VALUE)
        append_value(buf, item)
    buf.append(ITEM_END)
    return buf


def array_asc(buf: bytearray, value: SqlArray) -> None:
    buf += bytes((M.EXTENDED, TAG_ARRAY))
    buf += _body(value)


def array_desc(buf: bytearray, value: SqlArray) -> None:
    buf += bytes((M.EXTENDED_DESC, TAG_ARRAY))
    buf += bytes(_body(value)).translate(_FLIP)


def decode_array(data: bytes, off: int) -> tuple[SqlArray, int]:
    """Decode the array whose marker is at ``off`` (either direction): ``(array, new_offset)``."""
    from sqlkv.encoding.keys import decode_value

    start = off + 2
    if data[off] == M.EXTENDED_DESC:  # complement the rest: offsets stay the same
        data = bytes(data[:start]) + bytes(data[start:]).translate(_FLIP)
    items: list[Any] = []
    element_type: type | None = None
    pos = start
    while True:
        if pos >= len(data):
            raise corrupt(data, pos, "array without its end byte")
        item = data[pos]
        if item == ITEM_END:
            return SqlArray(items), pos + 1
        if item == ITEM_NULL:
            items.append(None)
            pos += 1
            continue
        if item != ITEM_VALUE:
            raise corrupt(data, pos, f"byte 0x{item:02x} is not an array item")
        value, descending, end = decode_value(data, pos + 1)
        if descending or value is None or isinstance(value, SqlArray):
            what = "a descending" if descending else ("a NULL" if value is None else "a nested array")
            raise corrupt(data, pos + 1, f"{what} value inside an array")
        if element_type is None:
            element_type = type(value)
        elif type(value) is not element_type:
            raise corrupt(data, pos + 1, "array elements of different types")
        items.append(value)
        pos = end
