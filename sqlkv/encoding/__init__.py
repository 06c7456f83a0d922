"""The encoding layer: SQL values to KV bytes and back.

A row of ``users (id INT PRIMARY KEY, name TEXT, email TEXT)`` with id 10, table 104, becomes:

    key    index_prefix(104, 1) + encode_key([10]) + family_suffix(0)   /Table/104/1/10/0
    value  encode_row_value({2: "ann", 3: "a@b.c"}, width=4)            [nil, nil, "ann", "a@b.c"]

and an index entry on ``email`` (index 2) the key ``index_prefix(104, 2) + encode_key(["a@b.c",
10])`` (the primary key columns make it unique). Reading decodes the same pieces in reverse with
`decode_uvarint` / `decode_key` / `decode_row_value`; `pretty_key` renders any key for humans.

Modules: `keys` (the order-preserving codec and ids), `varint` (length-in-marker integers),
`scalars` (Decimal, date, datetime in keys), `markers` (the marker byte table), `values`
(msgpack row values), `pretty` (key and span rendering).
"""

from __future__ import annotations

from sqlkv.encoding.keys import (
    NOT_NULL_ASC,
    NULL_ASC,
    NULL_DESC,
    append_value,
    decode_key,
    decode_uvarint,
    decode_value,
    encode_key,
    encode_uvarint,
    family_suffix,
    index_prefix,
    is_descending_marker,
    table_prefix,
)
from sqlkv.encoding.pretty import pretty_key, pretty_prefix, pretty_span, pretty_value
from sqlkv.encoding.values import (
    decode_row_value,
    decode_values,
    encode_row_value,
    encode_values,
)

__all__ = [
    "encode_key",
    "decode_key",
    "decode_value",
    "append_value",
    "encode_uvarint",
    "decode_uvarint",
    "index_prefix",
    "table_prefix",
    "family_suffix",
    "is_descending_marker",
    "NULL_ASC",
    "NULL_DESC",
    "NOT_NULL_ASC",
    "encode_row_value",
    "decode_row_value",
    "encode_values",
    "decode_values",
    "pretty_key",
    "pretty_span",
    "pretty_prefix",
    "pretty_value",
]
