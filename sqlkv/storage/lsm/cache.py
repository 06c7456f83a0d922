"""The LRU block cache shared by every table of one engine.

Keys are ``(file number, block offset)``; file numbers are never reused, so an entry can never
describe another file's bytes. Values are blocks as the reader keeps them (decoded lists, or a
format-2 block's bytes for point reads), charged the memory they hold; an entry that grows
(`grow`) or is swapped for its decoded form (`replace`) is charged again. Hits take no lock (OrderedDict operations are atomic under the GIL); the
miss path takes one to keep the byte count exact while evicting.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

# The default capacity (``cache_size`` not given) follows the live tables' bytes: room for all
# of them as point reads keep them (a packed block is charged its bytes plus ~5-15%, an
# index's blocks the most: their sampled keys), plus a margin for blocks scans decode where
# there is room -- 1.25x the tables, at least
# `AUTO_FLOOR`, at most `AUTO_CEILING` and never more than an eighth of the machine's memory.
# A small database then costs no more than it did with a fixed 64 MiB; one of 100 MB keeps
# its reads out of the disk path; a larger one is bounded all the same (grammar-notes/storage.md).
AUTO_FLOOR = 64 << 20
AUTO_CEILING = 256 << 20
AUTO_SHARE_OF_MEMORY = 8


def physical_memory() -> int | None:
    """The machine's memory in bytes, None where the platform does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def automatic_capacity(table_bytes: int, memory: int | None = None) -> int:
    """The block cache's capacity for ``table_bytes`` of live tables when the user set none."""
    ceiling = AUTO_CEILING
    if memory:
        ceiling = min(ceiling, memory // AUTO_SHARE_OF_MEMORY)
    return min(ceiling, max(AUTO_FLOOR, table_bytes + table_bytes // 4))


class BlockCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, capacity)
        self.entries: OrderedDict[tuple[int, int], Any] = OrderedDict()
        self._sizes: dict[tuple[int, int], int] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.promoted_need = 0  # the tables' blocks with their key lists (`may_promote`)

    def get(self, key: tuple[int, int]) -> Any:
        value = self.entries.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        try:
            self.entries.move_to_end(key)
        except KeyError:  # evicted by another thread in between: still a valid value
            pass
        return value

    def put(self, key: tuple[int, int], value: Any, size: int, evict: bool = True) -> None:
        """Cache ``value`` charged ``size``, evicting the least recently used entries to make
        room -- or, with ``evict`` False (a scan's decoded block), only if there is room: a
        scan larger than the cache would otherwise replace what point reads keep cached
        with blocks it will not read again."""
        if size > self.capacity:
            return
        with self._lock:
            if key in self._sizes or (not evict and self._bytes + size > self.capacity):
                return
            self.entries[key] = value
            self._sizes[key] = size
            self._bytes += size
            self._evict_to_capacity()

    def replace(self, key: tuple[int, int], value: Any, size: int, evict: bool = True) -> None:
        """Put ``value`` in place of what ``key`` holds (or add it), charged ``size``; with
        ``evict`` False, only if that fits without evicting anything."""
        with self._lock:
            held = self._sizes.get(key, 0)
            if not evict and self._bytes - held + size > self.capacity:
                return
            self._bytes -= held
            self._sizes.pop(key, None)
            self.entries.pop(key, None)
        self.put(key, value, size, evict)

    def resize(self, capacity: int) -> None:
        """Hold at most ``capacity`` bytes from now on (evicting at once when it shrinks)."""
        with self._lock:
            self.capacity = max(0, capacity)
            self._evict_to_capacity()

    def may_promote(self, size: int) -> bool:
        """Whether a cached block may take ``size`` more bytes for its decoded key list: only
        where that fits without evicting anything, and only while every live table's blocks
        with their key lists would fit (``promoted_need``, set by `LSMCore.fit_cache`) --
        else the lists, taken in whatever order reads come, would fill the room the blocks
        of the next reads need (advisory: unlocked)."""
        return self.promoted_need <= self.capacity and self._bytes + size <= self.capacity

    def grow(self, key: tuple[int, int], extra: int) -> None:
        """Charge ``extra`` more bytes to the entry ``key`` (it decoded part of itself)."""
        if not extra:
            return
        with self._lock:
            if key not in self._sizes:
                return  # evicted meanwhile: nothing holds the memory any more
            self._sizes[key] += extra
            self._bytes += extra
            self._evict_to_capacity()

    def _evict_to_capacity(self) -> None:
        while self._bytes > self.capacity and self.entries:
            old_key, _ = self.entries.popitem(last=False)
            self._bytes -= self._sizes.pop(old_key, 0)

    def evict_file(self, number: int) -> None:
        """Drop the blocks of a deleted file (they would otherwise age out)."""
        with self._lock:
            for key in [k for k in self._sizes if k[0] == number]:
                self.entries.pop(key, None)
                self._bytes -= self._sizes.pop(key)

    @property
    def used_bytes(self) -> int:
        return self._bytes

    def stats(self) -> dict[str, Any]:
        total = self.hits + self.misses
        return {
            "capacity": self.capacity,
            "used_bytes": self._bytes,
            "blocks": len(self.entries),
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": round(self.hits / total, 4) if total else None,
        }
