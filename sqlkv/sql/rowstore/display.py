"""KV pairs as people read them: keys in the key grammar with names, values decoded.

``SELECT key, value FROM sqlkv_internal.kv`` and the REPL's ``.kv users`` both print a pair of
``users`` as ``/users/users_pkey/10/0`` and ``{name: 'ann', email: 'a@b.c'}`` (a row value's
columns by name), an index entry's value as its list (``[10]``), anything undecodable as hex.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.encoding.keys import decode_key, decode_uvarint, table_prefix
from sqlkv.encoding.pretty import pretty_key
from sqlkv.encoding.values import decode_row_value, decode_single, decode_values
from sqlkv.errors import CorruptionError
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.storage.kv import prefix_end

Names = Callable[[int, "int | None"], tuple[str, "str | None"]]


def names_lookup(tables: dict[int, TableDescriptor]) -> Names:
    """A pretty_key ``names`` callback: (table id, index id) -> (table name, index name)."""

    def names(table_id: int, index_id: int | None):
        t = tables.get(table_id)
        if t is None:
            return (f"Table/{table_id}", str(index_id) if index_id is not None else None)
        iname = None
        if index_id is not None:
            iname = next((i.name for i in t.all_indexes() if i.id == index_id), str(index_id))
        return (t.name, iname)

    return names


def _index_id(key: bytes) -> int:
    _tid, off = decode_uvarint(key, 0)
    return decode_uvarint(key, off)[0]


def describe_value(table: TableDescriptor | None, key: bytes, value: bytes) -> str:
    """The stored value of ``key`` as text: a row value by column name, an entry's list, or hex."""
    if table is None:
        return value.hex()
    try:
        if _index_id(key) == 1:
            exploded = _exploded_part(table, key)
            if exploded is not None:
                return _exploded_text(exploded, value)
            decoded = decode_row_value(value)
            byid = {c.id: c.name for c in table.columns}
            return "{" + ", ".join(f"{byid.get(k, f'#{k}')}: {v!r}" for k, v in sorted(decoded.items())) + "}"
        return repr(decode_values(value))
    except CorruptionError:
        return "0x" + value.hex()


def _exploded_part(table: TableDescriptor, key: bytes) -> bool | None:
    """For a key of an exploded family: True for its header, False for an element; else None."""
    codec = codec_for(table)
    if not codec.exploded:
        return None
    end = decode_key(key, codec.npk, codec.pk_desc, len(codec.prefix))[1]
    family, off = decode_uvarint(key, end)
    if family not in codec.exploded:
        return None
    return off == len(key)


def _exploded_text(header: bool, value: bytes) -> str:
    """An exploded header as ``length 3`` / ``object, 2 keys`` / ``scalar 5``; an element as its value."""
    decoded = decode_single(value)
    if not header:
        return repr(decoded)
    if type(decoded) is int:
        return f"length {decoded}"
    if type(decoded) is list and len(decoded) == 2:
        kind, payload = decoded
        if kind == "scalar":
            return f"scalar {payload!r}"
        return f"{kind}, {payload} {'keys' if kind == 'object' else 'elements'}"
    return repr(decoded)


def table_pairs(reader, table: TableDescriptor, names: Names, limit: int | None = None
                ) -> Iterator[tuple[str, str, bytes, str]]:
    """(index name, pretty key, raw key, value text) of every KV pair of ``table``, in key
    order, read through ``reader`` (a transaction or a snapshot)."""
    start = table_prefix(table.id)
    index_names = {i.id: i.name for i in table.all_indexes()}
    for key, value in reader.scan(start, prefix_end(start), limit=limit):
        index_id = _index_id(key)
        yield (index_names.get(index_id, str(index_id)), pretty_key(key, names), key,
               describe_value(table, key, value))
