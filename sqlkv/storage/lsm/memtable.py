"""The memtable: recent writes in memory, until flushed to an L0 SSTable.

``data`` maps each key to its version ``(seq, value_or_None)``, or, once a key has several, to
a list of them oldest first, so a point read is one dict lookup. (A tuple of bytes and an int is
soon untracked by the cyclic garbage collector; a list per key would keep every collection busy
walking the memtable, which cost more than the inserts themselves.) Key order is needed only by scans and flushes, so new keys are appended
to ``_new_keys`` and merged into a SortedList lazily (a put costs a dict insert and an append,
not a tree insert). Range tombstones are kept as a list; their fragment index is rebuilt lazily.

Only the engine's writer mutates the active memtable (under ``lock``); readers take ``lock`` only
to cut a page of sorted keys for a scan. A memtable that has become immutable is never mutated.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any

from sortedcontainers import SortedList

from sqlkv.storage.kv import OP_DELETE, OP_DELETE_RANGE, OP_PUT
from sqlkv.storage.lsm.rangedel import RangeTombstone, TombstoneIndex

_ENTRY_OVERHEAD = 48  # rough bytes of Python objects per version, for the size threshold
SCAN_PAGE = 128


class Memtable:
    def __init__(self, wal_numbers: list[int] | None = None) -> None:
        self.data: dict[bytes, Any] = {}  # key -> (seq, value) or [(seq, value), ...]
        self._sorted = SortedList()
        self._new_keys: list[bytes] = []
        self.range_tombstones: list[RangeTombstone] = []
        self.new_range_tombstones: list[tuple[bytes, bytes]] = []  # since the writer last looked
        self._tomb_index: TombstoneIndex | None = TombstoneIndex([])
        self.lock = threading.Lock()
        self.size = 0
        self.entries = 0
        self.point_tombstones = 0
        self.min_seq = 0
        self.max_seq = 0
        self.wal_numbers: list[int] = list(wal_numbers or [])

    def apply(self, ops: list, base_seq: int) -> None:
        """Apply a batch's operations, op ``i`` at seq ``base_seq + i``. Caller holds ``lock``."""
        data = self.data
        new_keys = self._new_keys
        size = 0
        seq = base_seq
        for op, a, b in ops:
            if op == OP_PUT:
                current = data.get(a)
                if current is None:
                    data[a] = (seq, b)
                    new_keys.append(a)
                elif current.__class__ is tuple:
                    data[a] = [current, (seq, b)]
                else:
                    current.append((seq, b))
                size += len(a) + len(b) + _ENTRY_OVERHEAD
            elif op == OP_DELETE:
                current = data.get(a)
                if current is None:
                    data[a] = (seq, None)
                    new_keys.append(a)
                elif current.__class__ is tuple:
                    data[a] = [current, (seq, None)]
                else:
                    current.append((seq, None))
                size += len(a) + _ENTRY_OVERHEAD
                self.point_tombstones += 1
            elif op == OP_DELETE_RANGE:
                self.range_tombstones.append((a, b, seq))
                self.new_range_tombstones.append((a, b))
                self._tomb_index = None
                size += len(a) + len(b) + _ENTRY_OVERHEAD
            else:
                raise ValueError(f"unknown batch op {op}")
            seq += 1
        self.entries += len(ops)
        self.size += size
        if not self.min_seq:
            self.min_seq = base_seq
        self.max_seq = max(self.max_seq, seq - 1)

    def tombstone_index(self) -> TombstoneIndex:
        index = self._tomb_index
        if index is None:
            with self.lock:
                index = TombstoneIndex(list(self.range_tombstones))
                self._tomb_index = index
        return index

    def get(self, key: bytes, seq: int) -> tuple[int, bytes | None] | None:
        entry = self.data.get(key)
        if entry is None:
            return None
        if entry.__class__ is tuple:
            return entry if entry[0] <= seq else None
        for version in reversed(entry):
            if version[0] <= seq:
                return version
        return None

    def _sorted_keys(self) -> SortedList:
        """The key order, merging keys added since the last call. Caller holds ``lock``."""
        if self._new_keys:
            self._sorted.update(self._new_keys)
            self._new_keys = []
        return self._sorted

    def has_keys_in(self, start: bytes, end: bytes | None) -> bool:
        """Whether some key lies in ``[start, end)`` (one bisect: lets a short scan skip us).

        A scan may trust a False: keys added later carry seqs above its read seq. The first
        key at or after ``start`` is found in the sorted list's sublists (its ``_maxes`` and
        ``_lists``, sortedcontainers 2's layout, pinned in pyproject.toml) by two C-level
        bisects: `SortedList.bisect_left` would also compute the key's overall position, in
        Python, which is not needed here."""
        with self.lock:
            keys = self._sorted_keys()
            maxes = keys._maxes
            i = bisect_left(maxes, start)
            if i == len(maxes):
                return False
            sub = keys._lists[i]
            return end is None or sub[bisect_left(sub, start)] < end

    def page(self, lo: bytes, hi: bytes | None, lo_inclusive: bool, hi_inclusive: bool,
             reverse: bool, most: int = SCAN_PAGE) -> tuple[list, list, list, bool]:
        """Up to ``most`` keys in the range as parallel lists, ascending, newest version first.

        Returns ``(keys, seqs, values, more)``; ``more`` is False when the range is exhausted.
        """
        with self.lock:
            page = _page_keys(self._sorted_keys(), lo, hi, lo_inclusive, hi_inclusive, reverse, most)
            versions = list(map(self.data.__getitem__, page))
            more = len(page) == most
            if _ONE_VERSION_EACH.issuperset(map(type, versions)):  # no key with several versions
                return page, list(map(_SEQ, versions)), list(map(_VALUE, versions)), more
            out_keys: list[bytes] = []
            out_seqs: list[int] = []
            out_values: list[bytes | None] = []
            for key, entry in zip(page, versions):
                if entry.__class__ is tuple:
                    out_keys.append(key)
                    out_seqs.append(entry[0])
                    out_values.append(entry[1])
                else:
                    for seq, value in reversed(entry):
                        out_keys.append(key)
                        out_seqs.append(seq)
                        out_values.append(value)
        return out_keys, out_seqs, out_values, more

    def sorted_keys(self) -> list[bytes]:
        with self.lock:
            return list(self._sorted_keys())

    def sorted_entries(self):
        """Every version in (key ascending, seq descending) order: what a flush writes."""
        return entries_of(self.sorted_keys(), self.data)


_ONE_VERSION_EACH = frozenset((tuple,))
_SEQ = itemgetter(0)
_VALUE = itemgetter(1)


def _page_keys(keys: SortedList, lo: bytes, hi: bytes | None, lo_inclusive: bool, hi_inclusive: bool,
               reverse: bool, most: int) -> list[bytes]:
    """Up to ``most`` of the sorted ``keys`` in the range, ascending: the first ones, or the
    last ones when ``reverse``. The range's ends are found in the sorted list's sublists
    (`_place`: C-level bisects, as `Memtable.has_keys_in` does) and the keys sliced out of
    them, without the list's overall positions (`SortedList` computes those in Python)."""
    lists, maxes = keys._lists, keys._maxes
    i, j = _place(lists, maxes, lo, not lo_inclusive)
    if hi is None:
        k, m = len(lists) - 1, len(lists[-1]) if lists else 0
    else:
        k, m = _place(lists, maxes, hi, hi_inclusive)
    if i > k or i == k and j >= m:
        return []
    if i == k:
        start, stop = (max(j, m - most), m) if reverse else (j, min(m, j + most))
        return lists[i][start:stop]
    if reverse:  # from the end back to the start, a sublist at a time, until ``most``
        page = lists[k][max(0, m - most):m]
        while k > i and len(page) < most:
            k -= 1
            sub = lists[k]
            low = j if k == i else 0
            page[:0] = sub[max(low, len(sub) - (most - len(page))):]
        return page
    page = lists[i][j:j + most]
    while i < k and len(page) < most:
        i += 1
        page += lists[i][:min(m, most - len(page)) if i == k else most - len(page)]
    return page


def _place(lists: list[list[bytes]], maxes: list[bytes], key: bytes, after: bool) -> tuple[int, int]:
    """Where ``key`` would go among the sorted sublists ``lists`` (their last keys ``maxes``):
    (sublist, position in it) of the first key at or after ``key`` (past ``key`` when
    ``after``); the end of the last sublist when there is none."""
    find = bisect_right if after else bisect_left
    i = find(maxes, key)
    if i == len(maxes):
        return (i - 1, len(lists[-1])) if lists else (0, 0)
    return i, find(lists[i], key)


def entries_of(keys: list[bytes], data: dict[bytes, Any]):
    """The versions of ``data`` (a memtable's map) for ``keys`` in (key, seq descending) order;
    a worker process gets the keys and the map pickled and walks them with this too."""
    for key in keys:
        versions = data[key]
        if versions.__class__ is tuple:
            yield key, versions[0], versions[1]
        else:
            for i in range(len(versions) - 1, -1, -1):
                seq, value = versions[i]
                yield key, seq, value
