"""The in-memory engine: the KV interface over a SortedDict, for ``:memory:`` and fast tests.

Each key maps to a short list of versions ``[(seq, value_or_None), ...]`` (oldest first; None
is a tombstone). A snapshot at ``seq`` reads the newest version numbered ``<= seq``. The
*horizon* is the oldest seq a reader may still read at: the oldest live snapshot, or the start
of the time-travel window (history.py) when that is older. Versions no reader at or above the
horizon can see are pruned when the key is next written, and keys left holding old versions or
a tombstone are queued and pruned once the horizon passes their write, so a store with no
snapshots open and history off keeps one version per key.

Scans walk the SortedDict in pages of keys taken under the lock, so a writer may modify the
map while a long scan is in progress (the same page-by-page shape a remote store has).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from sortedcontainers import SortedDict

from sqlkv.errors import ConditionFailedError, InterfaceError
from sqlkv.storage.history import History
from sqlkv.storage.kv import OP_DELETE, OP_DELETE_RANGE, OP_PUT, Engine, Snapshot, WriteBatch

_PAGE = 256
_LATEST = 1 << 62  # a sequence number above every real one: "read the latest"


def _visible(versions: list[tuple[int, bytes | None]], seq: int) -> bytes | None:
    for vseq, value in reversed(versions):
        if vseq <= seq:
            return value
    return None


class MemoryEngine(Engine):
    """An MVCC SortedDict. Not durable: everything is gone on close."""

    def __init__(self, gc_ttl: float = 0.0, clock: Callable[[], float] = time.time) -> None:
        self._data: SortedDict = SortedDict()
        self.history = History(gc_ttl, clock)
        self._gc_threshold = 0  # the highest horizon versions were pruned at
        self._old_versions: deque[tuple[int, bytes]] = deque()  # (seq written, key) to prune later
        self._window: tuple[float, int] | None = None  # (clock, horizon) last looked up
        self._lock = threading.RLock()
        self._seq = 0
        self._snapshots: dict[int, int] = {}  # snapshot id -> seq
        self._snapshot_ids = itertools.count(1)
        self._closed = False
        self._writes = 0
        self._opened = time.time()  # the counters below count from here (nothing persists)

    # -- reads ---------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        return self._get_at(key, _LATEST)

    def scan(
        self,
        start: bytes,
        end: bytes | None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        return self._scan_at(start, end, reverse, limit, _LATEST)

    def _get_at(self, key: bytes, seq: int) -> bytes | None:
        self._check_open()
        versions = self._data.get(key)
        if versions is None:
            return None
        with self._lock:
            return _visible(versions, seq)

    def _scan_at(
        self, start: bytes, end: bytes | None, reverse: bool, limit: int | None, seq: int
    ) -> Iterator[tuple[bytes, bytes]]:
        self._check_open()
        if limit is not None and limit <= 0:
            return
        if end is not None and end <= start:
            return
        produced = 0
        lo, hi = start, end
        lo_inclusive = True
        hi_inclusive = False
        while True:
            with self._lock:
                page = []
                keys = self._data.irange(lo, hi, (lo_inclusive, hi_inclusive), reverse=reverse)
                for key in itertools.islice(keys, _PAGE):
                    page.append((key, _visible(self._data[key], seq)))
            for key, value in page:
                if value is not None:
                    yield key, value
                    produced += 1
                    if limit is not None and produced >= limit:
                        return
            if len(page) < _PAGE:
                return
            last = page[-1][0]
            if reverse:
                hi, hi_inclusive = last, False
            else:
                lo, lo_inclusive = last, False

    # -- writes --------------------------------------------------------------------------

    def write(self, batch: WriteBatch) -> int:
        self._check_open()
        with self._lock:
            for key, expected in batch.conditions:
                actual = self._get_at(key, _LATEST)
                if actual != expected:
                    raise ConditionFailedError(key, actual)
            self._seq += 1
            seq = self._seq
            ops = batch.ops
            history = self.history
            if history.enabled:
                ops = ops + history.stamp(self._scan_latest, lambda n: seq)
            horizon = self._horizon(seq)
            for op, a, b in ops:
                if op == OP_PUT:
                    self._add_version(a, seq, b, horizon)
                elif op == OP_DELETE:
                    self._add_version(a, seq, None, horizon)
                elif op == OP_DELETE_RANGE:
                    for key in list(self._data.irange(a, b, (True, False))):
                        self._add_version(key, seq, None, horizon)
                else:
                    raise ValueError(f"unknown batch op {op}")
            self._prune_old_versions(horizon)
            self._writes += 1
            return seq

    def _scan_latest(self, start: bytes, end: bytes | None, reverse: bool,
                     limit: int | None) -> Iterator[tuple[bytes, bytes]]:
        return self._scan_at(start, end, reverse, limit, _LATEST)

    def _horizon(self, seq: int) -> int:
        """The oldest seq a reader may read at (lock held): the oldest snapshot, or the start of
        the time-travel window; ``seq`` when there is neither."""
        horizon = min(self._snapshots.values(), default=seq)
        if self.history.enabled:
            # nothing stamped yet: readers can go back to this batch's own sample, no further
            window = self._window_horizon()
            horizon = min(horizon, seq - 1 if window is None else window)
        self._gc_threshold = max(self._gc_threshold, horizon)
        return horizon

    def _window_horizon(self) -> int | None:
        """The time-travel horizon, looked up at most once a second of the engine clock: a
        horizon up to a second old is lower, so it only keeps more."""
        now = self.history.clock()
        if self._window is None or not 0 <= now - self._window[0] < 1.0:
            horizon = self.history.horizon(self._scan_latest)
            if horizon is None:
                return None
            self._window = (now, horizon)
        return self._window[1]

    def _add_version(self, key: bytes, seq: int, value: bytes | None, horizon: int) -> None:
        versions = self._data.get(key)
        if versions is None:
            if value is not None:
                self._data[key] = [(seq, value)]
            return
        if versions[-1][0] == seq:  # a later op of the same batch replaces an earlier one
            versions.pop()
        versions.append((seq, value))
        if self._prune_key(key, versions, horizon):
            self._old_versions.append((seq, key))

    def _prune_key(self, key: bytes, versions: list[tuple[int, bytes | None]], horizon: int) -> bool:
        """Keep the newest version at or below ``horizon`` and everything above; drop the key
        if that leaves a lone tombstone. True when old versions or a tombstone remain."""
        keep_from = 0
        for i in range(len(versions) - 1, -1, -1):
            if versions[i][0] <= horizon:
                keep_from = i
                break
        if keep_from:
            del versions[:keep_from]
        if len(versions) == 1 and versions[0][1] is None:
            del self._data[key]
            return False
        return len(versions) > 1 or versions[-1][1] is None

    def _prune_old_versions(self, horizon: int) -> None:
        """Prune the queued keys whose write the horizon has passed (lock held)."""
        queue = self._old_versions
        while queue and queue[0][0] <= horizon:
            _, key = queue.popleft()
            versions = self._data.get(key)
            if versions is not None:
                self._prune_key(key, versions, horizon)

    # -- snapshots and lifecycle ---------------------------------------------------------

    def snapshot(self) -> Snapshot:
        self._check_open()
        with self._lock:
            sid = next(self._snapshot_ids)
            self._snapshots[sid] = self._seq
            return _MemorySnapshot(self, sid, self._seq)

    def snapshot_as_of(self, when: float) -> Snapshot:
        self._check_open()
        with self._lock:
            seq = self.history.resolve(self._scan_latest, when, self._gc_threshold, self._seq)
            sid = next(self._snapshot_ids)
            self._snapshots[sid] = seq
            return _MemorySnapshot(self, sid, seq)

    def _release(self, sid: int) -> None:
        with self._lock:
            self._snapshots.pop(sid, None)

    @property
    def last_seq(self) -> int:
        return self._seq

    def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("storage engine is closed")

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "engine": "memory",
                "since": self._opened,
                "keys": len(self._data),
                "last_seq": self._seq,
                "open_snapshots": len(self._snapshots),
                "gc_ttl": self.history.gc_ttl,
                "gc_threshold_seq": self._gc_threshold,
                "batches_written": self._writes,
            }


class _MemorySnapshot(Snapshot):
    def __init__(self, engine: MemoryEngine, sid: int, seq: int) -> None:
        self._engine = engine
        self._sid = sid
        self.seq = seq
        self._closed = False

    def get(self, key: bytes) -> bytes | None:
        return self._engine._get_at(key, self.seq)

    def scan(
        self,
        start: bytes,
        end: bytes | None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        return self._engine._scan_at(start, end, reverse, limit, self.seq)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._engine._release(self._sid)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
