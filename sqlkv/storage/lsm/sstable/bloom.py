"""A per-table bloom filter: ~10 bits per distinct key, 6 probes (about 1% false positives).

Probe positions use double hashing over one crc32 (the LevelDB trick: the second hash is the
first rotated by 15 bits), so a lookup costs one C call plus six bit tests.

Serialized form: one byte holding the probe count, then the bit array (little-endian bit order).
"""

from __future__ import annotations

import zlib

BITS_PER_KEY = 10
PROBES = 6


def key_hash(key: bytes) -> int:
    return zlib.crc32(key)


def build_filter(hashes: list[int], bits_per_key: int = BITS_PER_KEY) -> bytes:
    """Serialize a filter holding every hash in ``hashes`` (from `key_hash`)."""
    nbits = max(64, len(hashes) * bits_per_key)
    nbytes = (nbits + 7) // 8
    nbits = nbytes * 8
    bits = bytearray(nbytes)
    for h in hashes:
        delta = ((h >> 17) | (h << 15)) & 0xFFFFFFFF
        for _ in range(PROBES):
            pos = h % nbits
            bits[pos >> 3] |= 1 << (pos & 7)
            h = (h + delta) & 0xFFFFFFFF
    return bytes([PROBES]) + bytes(bits)


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
