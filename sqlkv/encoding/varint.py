"""Length-in-marker varints, the building block of ints and ids in keys.

A varint family is a run of marker bytes starting at ``base``: markers ``base .. base+7`` are
negative numbers needing 8 .. 1 payload bytes, the next ``small`` markers are the numbers
``0 .. small-1`` with no payload, and the last 8 markers are numbers ``>= small`` needing 1 .. 8
payload bytes. Payloads are big-endian (two's complement of that width for negatives), so byte
order is numeric order. The ascending int family (base 0x80, 110 small values) is the layout
CockroachDB uses; ``decode(encode(x))`` is checked to be canonical so a corrupted key never
decodes to a number whose re-encoding differs.

Example: 10 -> ``0x92``; 300 -> ``0xf7 0x01 0x2c``; -1 -> ``0x87 0xff``.
"""

from __future__ import annotations

from typing import Final

from sqlkv.errors import CorruptionError

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1

# bytes.translate table flipping every bit: descending payloads are complemented ascending ones.
COMPLEMENT = bytes(range(255, -1, -1))


def corrupt(data: bytes, offset: int, why: str) -> CorruptionError:
    """A `CorruptionError` naming the offset and showing the start of the key."""
    shown = bytes(data[:48]).hex()
    more = "..." if len(data) > 48 else ""
    return CorruptionError(f"corrupt key at offset {offset}: {why} (key 0x{shown}{more})")


def append_varint(buf: bytearray, x: int, base: int, small: int) -> None:
    """Append ``x`` (any int in [-2**64, 2**64)) in the varint family at ``base``."""
    if 0 <= x < small:
        buf.append(base + 8 + x)
    elif x >= small:
        n = (x.bit_length() + 7) >> 3
        buf.append(base + 7 + small + n)
        buf += x.to_bytes(n, "big")
    else:
        n = (((~x).bit_length() + 7) >> 3) or 1
        buf.append(base + 8 - n)
        buf += (x + (1 << (n << 3))).to_bytes(n, "big")


def read_varint(data: bytes, offset: int, base: int, small: int) -> tuple[int, int]:
    """Decode the varint whose marker is at ``offset``; return ``(x, new_offset)``.

    The caller has checked the marker belongs to the family.
    """
    rel = data[offset] - base
    if 8 <= rel < 8 + small:
        return rel - 8, offset + 1
    negative = rel < 8
    n = 8 - rel if negative else rel - 7 - small
    end = offset + 1 + n
    if end > len(data):
        raise corrupt(data, offset, f"truncated integer (needs {n} bytes)")
    x = int.from_bytes(data[offset + 1 : end], "big")
    if negative:
        x -= 1 << (n << 3)
        canonical = n == 1 or x < -(1 << ((n - 1) << 3))
    else:
        canonical = x >= small if n == 1 else x >= 1 << ((n - 1) << 3)
    if not canonical:
        raise corrupt(data, offset, "non-canonical integer length")
    return x, end
