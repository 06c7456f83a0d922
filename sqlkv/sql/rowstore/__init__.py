"""The row store: SQL rows <-> KV pairs, in one place.

Everything that knows how a row becomes keys and values, and back, lives here:

- `codec` -- `TableCodec`: a row of ``users(id INT PRIMARY KEY, name TEXT, email TEXT UNIQUE)``
  (table 104) ``(10, 'ann', 'a@b.c')`` is the primary-index pair
  ``/Table/104/1/10/0 -> [nil, nil, 'ann', 'a@b.c']`` (slots: the value at its column id,
  msgpack); `RowDecoder`
  turns scanned pairs back into tuples, decoding only the columns a plan reads;
- `index` -- `IndexCodec`: the row's secondary-index entries, e.g.
  ``/Table/104/2/"a@b.c" -> [10]`` in the unique index ``users_email_key``;
- `writer` -- `RowWriter`: the puts and deletes of an insert, update or delete, conditional
  (``put_if_absent``) where a key must be unique;
- `keyspans` -- `SpanBuilder`: the key spans of an index that a WHERE clause constrains
  (``id BETWEEN 10 AND 20`` -> ``/Table/104/1/10 - /Table/104/1/21``);
- `exploded` -- an ARRAY/JSONB column in a family ``WITH (layout = exploded)``: a header key
  plus one pair per element (``/Table/104/1/7/1`` -> 3, ``/Table/104/1/7/1/2`` -> 'b'), and the
  grouping of a row's many pairs; `exploded_reads` -- a point read getting only the elements a
  query uses;
- `display` -- pairs as people read them (``/users/users_pkey/10/0``), for
  ``sqlkv_internal.kv`` and the REPL's ``.kv``.

Key bytes themselves come from `sqlkv.encoding` (the order-preserving codec); the pairs are
read and written through a `sqlkv.txn.Transaction`.
"""

from sqlkv.sql.rowstore.codec import RowDecoder, TableCodec, codec_for
from sqlkv.sql.rowstore.index import IndexCodec
from sqlkv.sql.rowstore.writer import DuplicatePrimaryKey, RowWriter

__all__ = ["DuplicatePrimaryKey", "IndexCodec", "RowDecoder", "RowWriter", "TableCodec", "codec_for"]
