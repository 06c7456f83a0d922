"""Human-readable keys and spans, for EXPLAIN, the REPL's debug commands and error messages.

Walk-through: the primary-key get of ``SELECT * FROM users WHERE id = 10`` reads the key
``b"\\xf0\\x89\\x92\\x88"``. `pretty_key` decodes the uvarint table id (104) and index id (1),
then the self-describing values (10, then the family id 0, which decodes as one more int):
``/Table/104/1/10/0``. Given ``names`` it asks ``names(104, 1)`` and prints ``/users/primary/10/0``.

Rendering of values: ints and decimals plain, floats as ``1.5``, ``NaN``, ``+Inf``, ``-Inf``;
strings double-quoted with JSON escapes (``"a@b.c"``); bytes single-quoted with ``\\xNN`` escapes
for non-printable bytes (``'ab\\x00'``); ``NULL``; ``true``/``false``; dates ``2024-01-31``;
datetimes ``2024-01-31 12:00:00.000001``. A descending value is prefixed with ``~``
(``/Table/104/2/~"bob"/~NULL``), since descending encodings are stored complemented.

Nothing here raises: bytes that are not a table id render as ``/0x<hex>``; an undecodable tail
renders as ``/0x<hex>`` after what did decode; a key that is a decodable key with its last byte
incremented (what ``prefix_end`` makes) renders as that key followed by ``/PrefixEnd``.
"""

from __future__ import annotations

import datetime
import uuid
import json
import math
from collections.abc import Callable
from decimal import Decimal

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.interval import Interval
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.encoding.keys import decode_uvarint, decode_value
from sqlkv.errors import CorruptionError
from sqlkv.storage.kv import prefix_end

NameLookup = Callable[[int, "int | None"], "tuple[str, str | None]"]


def pretty_value(value: object, descending: bool = False) -> str:
    """One key value as it appears between slashes in a pretty key."""
    text = _render(value)
    return "~" + text if descending else text


def _render(value: object) -> str:
    if value is None:
        return "NULL"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        return _render_bytes(bytes(value))
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (int, Decimal, datetime.date, datetime.time, uuid.UUID, Interval)):
        return str(value)
    if isinstance(value, SqlArray):  # ARRAY["a",NULL]: each element as a key value
        return "ARRAY[" + ",".join(_render(v) for v in value) + "]"
    if isinstance(value, Jsonb):
        return f"jsonb:{value}"  # its JSON text, told apart from a TEXT key
    return repr(value)


def _render_bytes(data: bytes) -> str:
    out = []
    for byte in data:
        if 0x20 <= byte < 0x7F and byte not in (0x27, 0x5C):  # printable, not ' or \
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "'" + "".join(out) + "'"


def _head(table_id: int, index_id: int | None, names: NameLookup | None) -> str:
    numeric = f"/Table/{table_id}" + ("" if index_id is None else f"/{index_id}")
    if names is None:
        return numeric
    try:
        table_name, index_name = names(table_id, index_id)
    except Exception:  # a debugging aid renders what the catalog knows and never raises
        return numeric
    if not table_name:
        return numeric
    if index_id is None:
        return f"/{table_name}"
    return f"/{table_name}/{index_name if index_name else index_id}"


def _render_values(key: bytes, offset: int) -> tuple[list[str], int]:
    """Render values from ``offset`` until the end or the first undecodable byte."""
    parts: list[str] = []
    while offset < len(key):
        try:
            value, descending, offset_next = decode_value(key, offset)
        except CorruptionError:
            break
        parts.append(pretty_value(value, descending))
        offset = offset_next
    return parts, offset


def _prefix_end_origin(key: bytes, offset: int) -> list[str] | None:
    """If ``key`` is ``prefix_end`` of a key whose values decode fully, render those values."""
    if not key or key[-1] == 0:
        return None
    base = key[:-1] + bytes([key[-1] - 1])
    for candidate in (base, base + b"\xff"):
        parts, stop = _render_values(candidate, offset)
        if stop == len(candidate):
            return parts
    return None


def pretty_key(key: bytes, names: NameLookup | None = None) -> str:
    """Render ``key`` as ``/Table/<table>/<index>/<values...>`` (names: ``/users/primary/...``)."""
    key = bytes(key)
    if not key:
        return "/Min"
    try:
        table_id, offset = decode_uvarint(key, 0)
    except CorruptionError:
        return "/0x" + key.hex()
    if offset == len(key):
        return _head(table_id, None, names)
    try:
        index_id, offset = decode_uvarint(key, offset)
    except CorruptionError:
        return _head(table_id, None, names) + "/0x" + key[offset:].hex()
    parts, stop = _render_values(key, offset)
    text = _head(table_id, index_id, names) + "".join("/" + part for part in parts)
    if stop == len(key):
        return text
    origin = _prefix_end_origin(key, stop)
    if origin is not None:
        return text + "".join("/" + part for part in origin) + "/PrefixEnd"
    return text + "/0x" + key[stop:].hex()


def pretty_prefix(prefix: bytes, names: NameLookup | None = None) -> str:
    """Render the prefix span ``[prefix, prefix_end(prefix))``: just the prefix."""
    return pretty_key(prefix, names)


def pretty_span(start: bytes, end: bytes | None, names: NameLookup | None = None) -> str:
    """Render ``[start, end)`` as ``/Table/104/1/10 - /Table/104/1/20``.

    A prefix span ``(p, prefix_end(p))`` and a single-key span ``(k, k + b"\\x00")`` render as
    just ``p`` / ``k``; ``end=None`` renders as ``/Max``.
    """
    if end is not None and (end == prefix_end(start) or end == start + b"\x00") and start:
        return pretty_key(start, names)
    right = "/Max" if end is None else pretty_key(end, names)
    return f"{pretty_key(start, names)} - {right}"


__all__ = ["pretty_key", "pretty_span", "pretty_prefix", "pretty_value", "NameLookup"]
