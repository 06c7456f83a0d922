"""A per-table bloom filter: 10-20 bits per distinct key, 6 probes (under 1% false positives).

Probe positions use double hashing over one crc32 (the LevelDB trick: the second hash is the
first rotated by 15 bits), so a lookup costs one C call plus six bit tests.

Serialized form: one byte holding the probe count, then the bit array (little-endian bit order).
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections import deque
from itertools import repeat

BITS_PER_KEY = 10
PROBES = 6


def key_hash(key: bytes) -> int:
    return zlib.crc32(key)


def filter_bits(keys: int, bits_per_key: int = BITS_PER_KEY) -> int:
    """The filter's size in bits for ``keys`` keys: the smallest power of two holding
    ``bits_per_key`` per key (at least 64), so that ``h mod nbits`` is ``h & (nbits - 1)``
    and `build_filter` can take it for every key at once."""
    return 1 << max(6, (keys * bits_per_key - 1).bit_length())


def build_filter(hashes: list[int], bits_per_key: int = BITS_PER_KEY) -> bytes:
    """Serialize a filter holding every hash in ``hashes`` (from `key_hash`).

    The probes are computed for all keys at once in C: the hashes sit in the 64-bit lanes of
    one Python int (each lane's arithmetic stays below 2^33, so no carry crosses lanes), the
    positions come out as an array, and one ``map`` sets them in a byte-per-bit array that is
    packed into bits at the end. The result is the bit array the per-key loop of storage.md
    ("Bloom block") gives for the same ``nbits``."""
    n = len(hashes)
    nbits = filter_bits(n, bits_per_key)
    flags = bytearray(nbits)  # one byte per bit, packed below
    if n:
        ones = _lanes_of(0xFFFFFFFF, n)
        cur = _to_lanes(hashes)
        delta = ((cur >> 17) & _lanes_of(0x7FFF, n)) | ((cur << 15) & ones)
        low = _lanes_of(nbits - 1, n)
        setbit = flags.__setitem__
        for _ in range(PROBES):
            deque(map(setbit, _from_lanes(cur & low, n), repeat(1)), maxlen=0)
            cur = (cur + delta) & ones
    packed = 0
    for bit in range(8):  # byte k of flags[bit::8] is bit ``8k + bit``: 0 or 1, shifted into place
        packed |= int.from_bytes(flags[bit::8], "little") << bit
    return bytes([PROBES]) + packed.to_bytes(nbits // 8, "little")


def _lanes_of(value: int, n: int) -> int:
    return int.from_bytes(value.to_bytes(8, "little") * n, "little")


def _to_lanes(values: list[int]) -> int:
    lanes = array("Q", values)
    if sys.byteorder == "big":
        lanes.byteswap()
    return int.from_bytes(lanes.tobytes(), "little")


def _from_lanes(lanes: int, n: int) -> array:
    values = array("Q")
    values.frombytes(lanes.to_bytes(8 * n, "little"))
    if sys.byteorder == "big":
        values.byteswap()
    return values


class BloomFilter:
    """A deserialized filter; `may_contain` is False only for keys certainly absent."""

    __slots__ = ("bits", "nbits", "probes")

    def __init__(self, data: bytes) -> None:
        self.probes = data[0] if data else 0
        self.bits = data[1:]
        self.nbits = len(self.bits) * 8

    def may_contain(self, key: bytes) -> bool:
        nbits = self.nbits
        if not nbits:
            return True
        bits = self.bits
        h = zlib.crc32(key)
        delta = ((h >> 17) | (h << 15)) & 0xFFFFFFFF
        for _ in range(self.probes):
            pos = h % nbits
            if not bits[pos >> 3] & (1 << (pos & 7)):
                return False
            h = (h + delta) & 0xFFFFFFFF
        return True
