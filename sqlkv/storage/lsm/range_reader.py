"""One scan of the LSM read in successive lists: the merged cursors kept between reads.

A batched scan (`Transaction.scan_batches`: a table scan under a filter, an aggregate, a
join's input) asks for a few hundred pairs at a time. Reading each batch with a fresh
`LSMCore.read_range_at` opened every source again at the batch's first key: a memtable page
of up to `memtable.SCAN_PAGE` keys copied per batch though only the few below the batch's
last key were used, every table cursor positioned by bisect again, the merge's heads loaded
again. A `RangeReader` opens the cursors once and continues where the last read stopped, so
each memtable page and each block is cut once per scan.

While open it pins the version it reads (its tables stay on disk, as for a lazy scan); it
unpins it when a read comes back short (the range is exhausted), on `close`, or when it is
collected.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import chain, islice
from typing import TYPE_CHECKING

from sqlkv.storage.lsm.iterators import merged_chunks

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore
    from sqlkv.storage.lsm.manifest import Version


class RangeReader:
    """The visible pairs of ``[start, end)`` at ``seq`` (in scan order), handed out by `read`."""

    def __init__(self, core: LSMCore, start: bytes, end: bytes | None, reverse: bool, seq: int,
                 check: Callable[[], None] | None = None) -> None:
        core.check_open()
        self._core = core
        self._check = check
        self._version: Version | None = None
        self._pairs = None
        self._started = 0
        if end is not None and end <= start:
            return
        self._started = time.perf_counter_ns()
        with core.lock:
            state = core.read_state
            state.version.pins += 1
            core.pinned[id(state.version)] = state.version
        self._version = state.version
        try:
            cursors, tombs = core._cursors(state, start, end, reverse)
            if cursors:
                self._pairs = chain.from_iterable(merged_chunks(cursors, seq, tombs, reverse))
        finally:
            if self._pairs is None:  # no source can hold a key of the range, or it failed
                self.close()

    def read(self, count: int | None = None) -> list[tuple[bytes, bytes]]:
        """The next ``count`` pairs (all that are left when None); fewer only at the end."""
        if self._check is not None:
            self._check()
        pairs = self._pairs
        if pairs is None:
            return []
        core = self._core
        core.check_open()
        try:
            out = list(pairs if count is None else islice(pairs, count))
        except BaseException:
            self.close()
            raise
        if self._started:  # the first read includes the seek: timed as a scan's first pair
            core.latency["scan"].record(time.perf_counter_ns() - self._started)
            self._started = 0
        if count is None or len(out) < count:
            self.close()
        return out

    def close(self) -> None:
        """Release the version (idempotent); later reads return nothing."""
        version, self._version, self._pairs = self._version, None, None
        if version is not None:
            self._core.unpin(version)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- a reader collected at exit must not raise
            pass
