"""Range tombstones: ``(start, end, seq)`` triples, and a fragmented index to query them.

A range tombstone written at seq ``t`` hides every version of every key in ``[start, end)``
whose seq is below ``t``, for readers at a seq >= ``t``. Tombstones live in the memtable that
received them and, once flushed, in the version's list (the MANIFEST), not inside SSTables; see
grammar-notes/storage.md for how compaction retires them.

`TombstoneIndex` cuts the key space at every tombstone boundary (Pebble's "fragmentation"), so
that each fragment carries a sorted list of the seqs covering it. "Is version ``v`` of key ``k``
deleted for a reader at ``s``?" is then two bisects.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable

RangeTombstone = tuple[bytes, bytes, int]


class TombstoneIndex:
    """Immutable fragment index over a set of range tombstones."""

    __slots__ = ("bounds", "seqs", "tombstones")

    def __init__(self, tombstones: Iterable[RangeTombstone]) -> None:
        self.tombstones = [t for t in tombstones if t[0] < t[1]]
        self.bounds: list[bytes] = sorted({b for s, e, _ in self.tombstones for b in (s, e)})
        frags: list[list[int]] = [[] for _ in range(max(0, len(self.bounds) - 1))]
        for start, end, seq in self.tombstones:
            lo = bisect_left(self.bounds, start)
            hi = bisect_left(self.bounds, end)
            for i in range(lo, hi):
                frags[i].append(seq)
        for f in frags:
            f.sort()
        self.seqs = frags

    def __bool__(self) -> bool:
        return bool(self.tombstones)

    def __len__(self) -> int:
        return len(self.tombstones)

    def meets(self, start: bytes, end: bytes | None) -> bool:
        """Whether some tombstone covers a key of ``[start, end)`` (``end`` None: no bound)."""
        bounds, seqs = self.bounds, self.seqs
        first = max(0, bisect_right(bounds, start) - 1)  # the fragment holding ``start``
        last = len(seqs) if end is None else min(len(seqs), bisect_left(bounds, end))
        return any(seqs[first:last])

    def _fragment(self, key: bytes) -> list[int] | None:
        i = bisect_right(self.bounds, key) - 1
        if i < 0 or i >= len(self.seqs):
            return None
        return self.seqs[i]

    def covers(self, key: bytes, version_seq: int, read_seq: int) -> bool:
        """True when a tombstone with ``version_seq < seq <= read_seq`` covers ``key``."""
        frag = self._fragment(key)
        if not frag:
            return False
        j = bisect_right(frag, version_seq)
        return j < len(frag) and frag[j] <= read_seq

    def covering_above(self, key: bytes, version_seq: int) -> list[int]:
        """Seqs of the tombstones covering ``key`` that are newer than ``version_seq``."""
        frag = self._fragment(key)
        if not frag:
            return []
        return frag[bisect_right(frag, version_seq):]


def skip_target(indexes: list[TombstoneIndex], key: bytes, read_seq: int, source_max_seq: int,
                reverse: bool) -> tuple[bytes, int] | None:
    """Where a source whose entries are all older than ``source_max_seq`` may jump to.

    When a fragment containing ``key`` is deleted at a seq in ``(source_max_seq, read_seq]``,
    every entry of that source in the fragment is hidden: a forward scan may continue at the
    fragment's end, a reverse one below its start. Returns that bound and the tombstone's seq;
    None when no such fragment covers ``key``.
    """
    for index in indexes:
        bounds = index.bounds
        i = bisect_right(bounds, key) - 1
        if i < 0 or i >= len(index.seqs):
            continue
        frag = index.seqs[i]
        j = bisect_right(frag, read_seq)
        if j and frag[j - 1] > source_max_seq:
            return (bounds[i] if reverse else bounds[i + 1]), frag[j - 1]
    return None


def any_covers(indexes: list[TombstoneIndex], key: bytes, version_seq: int, read_seq: int) -> bool:
    for index in indexes:
        if index.covers(key, version_seq, read_seq):
            return True
    return False


def none_between(indexes: list[TombstoneIndex], low: bytes, high: bytes) -> bool:
    """True when no tombstone of any index covers a key of ``[low, high]`` (both in one
    uncovered gap between fragments): a scan may then emit that stretch unchecked."""
    for index in indexes:
        bounds = index.bounds
        i = bisect_right(bounds, low) - 1
        if i != bisect_right(bounds, high) - 1:
            return False
        if 0 <= i < len(index.seqs) and index.seqs[i]:
            return False
    return True
