"""The key encoding of JSONB (issue 15): byte order is PostgreSQL's JSONB order.

Behind the extended-type markers (0x1e ascending, 0x1f descending; extended.py), tag 0x05, then
a self-delimiting payload (descending: every payload byte complemented):

    top-level empty array   00                      (sorts below everything, as in PostgreSQL)
    null                    01
    string                  02 UTF-8 with 00 escaped as 00 ff, then 00 01 (as TEXT keys)
    number                  03 the DECIMAL key encoding (trailing zeros dropped: 1.0 = 1)
    false / true            04 / 05
    array                   06 count (4 bytes big-endian) then each element
    object                  07 count (4 bytes) then key (as a string, without the 02) and value
                            for each pair in storage order (shorter keys first, then bytewise)

Kinds sort null < string < number < boolean < array < object; arrays and objects by their count
first, then element by element (pair by pair), which is PostgreSQL's btree order for jsonb
(`sqlkv.encoding.jsonb.compare`). Decoding is strict: an unknown tag, a truncated payload, a bad
escape, invalid UTF-8, a non-finite number or anything that does not re-encode to the same bytes
(keys out of order, a decimal not in canonical form) is a CorruptionError. A number decodes to
its canonical value (``2.50`` in a key reads back ``2.5``, as DECIMAL keys do).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlkv.encoding import markers as M
from sqlkv.encoding.jsonb import Jsonb, number, sorted_object
from sqlkv.encoding.scalars import decode_decimal, encode_decimal
from sqlkv.encoding.varint import corrupt
from sqlkv.errors import CorruptionError, DataError

TAG_JSONB = 0x05
_EMPTY_TOP, _NULL, _STRING, _NUMBER, _FALSE, _TRUE, _ARRAY, _OBJECT = range(8)
_FLIP = bytes(range(255, -1, -1))
_MAX_COUNT = 2**32 - 1


def _text(buf: bytearray, s: str) -> None:
    try:
        data = s.encode("utf-8")
    except UnicodeEncodeError:
        raise DataError("a JSONB string with a lone surrogate cannot be stored in a key") from None
    buf += data.replace(b"\x00", b"\x00\xff") + b"\x00\x01"


def _count(buf: bytearray, n: int) -> None:
    if n > _MAX_COUNT:
        raise DataError(f"a JSONB container of {n} elements is too large for an index key")
    buf += n.to_bytes(4, "big")


def _write(buf: bytearray, tree: Any) -> None:
    if tree is None:
        buf.append(_NULL)
    elif tree is True or tree is False:
        buf.append(_TRUE if tree else _FALSE)
    elif isinstance(tree, str):
        buf.append(_STRING)
        _text(buf, tree)
    elif isinstance(tree, (int, Decimal)):
        buf.append(_NUMBER)
        encode_decimal(buf, Decimal(tree), False)
    elif isinstance(tree, list):
        buf.append(_ARRAY)
        _count(buf, len(tree))
        for item in tree:
            _write(buf, item)
    else:
        buf.append(_OBJECT)
        _count(buf, len(tree))
        for key, item in tree.items():
            _text(buf, key)
            _write(buf, item)


def payload(value: Jsonb) -> bytes:
    buf = bytearray()
    if isinstance(value.tree, list) and not value.tree:
        buf.append(_EMPTY_TOP)
    else:
        _write(buf, value.tree)
    return bytes(buf)


def jsonb_asc(buf: bytearray, value: Jsonb) -> None:
    buf += bytes((M.EXTENDED, TAG_JSONB)) + payload(value)


def jsonb_desc(buf: bytearray, value: Jsonb) -> None:
    buf += bytes((M.EXTENDED_DESC, TAG_JSONB)) + payload(value).translate(_FLIP)


# ---------------------------------------------------------------- decoding


class _Reader:
    """Reads a payload (already un-complemented) from ``data`` at ``pos``."""

    def __init__(self, data: bytes, pos: int, key: bytes, key_offset: int) -> None:
        self.data, self.pos = data, pos
        self.key, self.key_offset = key, key_offset

    def fail(self, why: str) -> CorruptionError:
        return corrupt(self.key, self.key_offset, f"JSONB key value: {why}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("cut short")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def count(self) -> int:
        raw = self.data[self.pos : self.pos + 4]
        if len(raw) != 4:
            raise self.fail("container count cut short")
        self.pos += 4
        return int.from_bytes(raw, "big")

    def text(self) -> str:
        out = bytearray()
        while True:
            b = self.byte()
            if b != 0:
                out.append(b)
                continue
            follow = self.byte()
            if follow == 0x01:
                break
            if follow != 0xFF:
                raise self.fail("bad string escape")
            out.append(0)
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("invalid UTF-8 in a string") from None

    def number(self) -> int | Decimal:
        try:
            value, end = decode_decimal(self.data, self.pos)
        except (CorruptionError, IndexError):
            raise self.fail("bad number") from None
        if not isinstance(value, Decimal) or not value.is_finite():
            raise self.fail("a number that is not finite")
        self.pos = end
        return number(value)

    def value(self, depth: int = 0) -> Any:
        if depth > 10_000:
            raise self.fail("nested too deeply")
        tag = self.byte()
        if tag == _NULL:
            return None
        if tag in (_FALSE, _TRUE):
            return tag == _TRUE
        if tag == _STRING:
            return self.text()
        if tag == _NUMBER:
            return self.number()
        if tag == _ARRAY:
            return [self.value(depth + 1) for _ in range(self.count())]
        if tag == _OBJECT:
            pairs = {}
            for _ in range(self.count()):
                key = self.text()
                pairs[key] = self.value(depth + 1)
            return sorted_object(pairs)
        raise self.fail(f"unknown tag 0x{tag:02x}")


def decode_jsonb(data: bytes, off: int, descending: bool) -> tuple[Jsonb, int]:
    """The JSONB value whose payload starts at ``off`` (after marker and tag), and the offset after it."""
    body = data[off:].translate(_FLIP) if descending else data[off:]
    reader = _Reader(body, 0, data, off)
    if body[:1] == bytes((_EMPTY_TOP,)):
        reader.pos = 1
        value = Jsonb([])
    else:
        value = Jsonb(reader.value())
    if payload(value) != body[: reader.pos]:  # canonical: re-encodes to the same bytes
        raise reader.fail("not in canonical form")
    return value, off + reader.pos
