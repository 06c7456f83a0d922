"""`LSMEngine`: the KV `Engine` over an LSM store directory, and `open_lsm`.

Opening the same directory twice in one process returns two handles on one shared `LSMCore`
(a registry keyed by the real path, refcounted): closing one handle leaves the other working,
and the last close closes the store. Options of later opens are ignored; the first open's win.
A second writing *process* is kept out by the LOCK file (lock.py); read-only processes may
open beside it and catch up with ``refresh()``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from sqlkv.errors import InterfaceError, ProgrammingError
from sqlkv.storage.kv import Engine, Snapshot, WriteBatch
from sqlkv.storage.lsm.core import LSMCore
from sqlkv.storage.metrics import SAMPLE_EVERY, Latencies
from sqlkv.storage.lsm.ingest import ingest as ingest_pairs
from sqlkv.storage.lsm.firstread import FIRST_READ_MOST, first_read
from sqlkv.storage.lsm.shortread import short_read

from sqlkv.storage.lsm.column_scan import scan_columns
from sqlkv.storage.lsm.range_reader import RangeReader
from sqlkv.storage.lsm.sizes import approximate_sizes
from sqlkv.storage.lsm.verify import verify_files

_OPTIONS = {"durability", "cache_size", "memtable_size", "read_only", "block_size", "target_file_size",
            "level_base_bytes", "l0_trigger", "l0_slowdown", "l0_stop", "background_threads",
            "background_processes", "gc_ttl", "clock"}
# options that are not sizes or counts (gc_ttl is checked by the history window, history.py)
_NOT_SIZES = {"durability", "read_only", "background_threads", "background_processes", "gc_ttl", "clock"}
_registry: dict[str, tuple[LSMCore, int]] = {}
_SAMPLE_MASK = SAMPLE_EVERY - 1
_registry_lock = threading.Lock()
# stores whose last handle is closing right now: an open of the same path waits for the close
# to finish (and give back the LOCK file) instead of failing as "locked by another process"
_closing: dict[str, threading.Event] = {}


def open_lsm(path: str, **options: Any) -> LSMEngine:
    """Open (creating unless ``read_only``) the database directory ``path``.

    Options: ``durability`` ("full" default, "normal", "off"), ``cache_size`` (bytes of block
    cache; default: 1.25x the live tables' bytes, at least 64 MiB, at most 256 MiB or an
    eighth of the machine's memory, cache.py), ``memtable_size`` (bytes, default 4 MB), ``read_only`` (False), and
    tuning knobs ``block_size``, ``target_file_size``, ``level_base_bytes``, ``l0_trigger``;
    ``background_processes`` (True): build flushed and compacted tables in worker processes;
    ``gc_ttl`` (seconds, default 0: off; the SQL layer opens with 600) the time-travel retention window and ``clock``
    (a ``time.time``-like callable, for tests) the clock commits are stamped with (history.py).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise InterfaceError(f"unknown LSM option(s) {', '.join(unknown)}; known: {', '.join(sorted(_OPTIONS))}")
    _check_sizes(options)
    real = os.path.realpath(os.fspath(path))
    while True:
        with _registry_lock:
            closing = _closing.get(real)
            if closing is None:
                return LSMEngine(_share_or_open(real, options))
        closing.wait()


def _share_or_open(real: str, options: dict[str, Any]) -> LSMCore:
    """The open core for ``real``, shared, or a new one (called holding the registry lock)."""
    entry = _registry.get(real)
    if entry is not None and not entry[0].closed:
        core, refs = entry
        if core.read_only and not options.get("read_only", False):
            raise InterfaceError(f"database {real} is already open read-only in this process")
        _registry[real] = (core, refs + 1)
    else:
        core = LSMCore(real, **options)
        _registry[real] = (core, 1)
    return core


# numeric options and their smallest sensible value (a cache of 0 bytes caches nothing)
_MINIMUMS = {"cache_size": 0, "memtable_size": 1, "block_size": 1, "target_file_size": 1,
             "level_base_bytes": 1, "l0_trigger": 1, "l0_slowdown": 1, "l0_stop": 1}


def _check_sizes(options: dict[str, Any]) -> None:
    """Sizes and counts are whole numbers at least their minimum, refused by name otherwise (a
    URL's ``cache_size=abc`` failed deep in the block cache with a TypeError; negative sizes
    were accepted)."""
    for name, value in options.items():
        if name in _NOT_SIZES or value is None:
            continue
        minimum = _MINIMUMS.get(name, 0)
        if type(value) is not int or value < minimum:
            least = f" (at least {minimum})" if minimum else ""
            raise ProgrammingError(f"LSM option {name} must be a non-negative integer{least}, not {value!r}")


def _release(core: LSMCore) -> None:
    with _registry_lock:
        entry = _registry.get(core.path)
        if entry is None or entry[0] is not core:
            core.close()
            return
        refs = entry[1] - 1
        if refs > 0:
            _registry[core.path] = (core, refs)
            return
        del _registry[core.path]
        closed = _closing[core.path] = threading.Event()
    try:
        core.close()
    finally:
        with _registry_lock:
            del _closing[core.path]
        closed.set()


class LSMEngine(Engine):
    """One handle on a shared LSM store. Thread-safe."""

    def __init__(self, core: LSMCore) -> None:
        self._core = core
        self._closed = False
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        return self._core.path

    def _live(self) -> LSMCore:
        if self._closed:
            raise InterfaceError(f"database {self._core.path} is closed")
        return self._core

    def get(self, key: bytes) -> bytes | None:
        core = self._core
        if self._closed or core.closed:
            raise InterfaceError(f"database {core.path} is closed")
        state, seq = core.latest()
        core.get_tick += 1
        if core.get_tick & _SAMPLE_MASK:  # timing one get in SAMPLE_EVERY (see metrics.py)
            return core.get_at(key, seq, state)
        return core.timed_get(key, seq, state)

    def scan(self, start: bytes, end: bytes | None, reverse: bool = False,
             limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        core = self._live()
        return core.scan_at(start, end, reverse, limit, None)

    def write(self, batch: WriteBatch) -> int:
        return self._live().write(batch)

    def write_nowait(self, batch: WriteBatch) -> int:
        return self._live().write_nowait(batch)

    def ingest(self, pairs: Iterable[tuple[bytes, bytes]], point_reads: bool = True) -> int:
        return ingest_pairs(self._live(), pairs, point_reads)

    def wait_durable(self, seq: int) -> None:
        # No closed-check: close() syncs the WAL, so waiting after it returns at once.
        self._core.wait_durable(seq)

    def snapshot(self) -> Snapshot:
        core = self._live()
        sid, seq = core.register_snapshot()
        return LSMSnapshot(core, sid, seq)

    def snapshot_as_of(self, when: float) -> Snapshot:
        core = self._live()
        sid, seq = core.register_snapshot_as_of(when)
        return LSMSnapshot(core, sid, seq)

    @property
    def history(self):
        """The timeline and retention window (history.py)."""
        return self._core.history

    @property
    def last_seq(self) -> int:
        return self._core.visible_seq

    @property
    def read_only(self) -> bool:
        return self._core.read_only

    def flush(self) -> None:
        self._live().flush()

    def verify(self) -> list[str]:
        return verify_files(self._live())

    def compact(self) -> None:
        self._live().compact()

    def refresh(self) -> None:
        """Read-only: see what the writing process has made durable since (no-op for the writer)."""
        self._live().refresh()

    def finish_background_work(self) -> None:
        self._live().finish_background_work()

    def stats(self) -> dict[str, Any]:
        return self._live().stats()

    def latencies(self) -> Latencies:
        return self._live().latency

    def recent_compactions(self) -> list[dict[str, Any]]:
        return self._live().compaction_log.recent()

    def approximate_sizes(self, spans: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]]:
        return approximate_sizes(self._live(), spans)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _release(self._core)

    def __repr__(self) -> str:
        return f"LSMEngine({self._core.path!r}{', closed' if self._closed else ''})"


class LSMSnapshot(Snapshot):
    """A registered read seq: compaction keeps every version it can see until it is closed."""

    def __init__(self, core: LSMCore, sid: int, seq: int) -> None:
        self._core = core
        self._sid = sid
        self.seq = seq
        self._closed = False

    def get(self, key: bytes) -> bytes | None:
        if self._closed:
            raise InterfaceError("snapshot is closed")
        core = self._core
        core.check_open()
        core.get_tick += 1
        if core.get_tick & _SAMPLE_MASK:
            return core.get_at(key, self.seq)
        return core.timed_get(key, self.seq)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        if self._closed:
            raise InterfaceError("snapshot is closed")
        core = self._core
        core.check_open()
        return core.get_many_at(keys, self.seq)

    def scan(self, start: bytes, end: bytes | None, reverse: bool = False,
             limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        if self._closed:
            raise InterfaceError("snapshot is closed")
        return self._core.scan_at(start, end, reverse, limit, self.seq)

    def read_range(self, start: bytes, end: bytes | None, reverse: bool = False,
                   limit: int | None = None) -> list[tuple[bytes, bytes]]:
        if self._closed:
            raise InterfaceError("snapshot is closed")
        core = self._core
        if limit is not None and 0 < limit <= FIRST_READ_MOST and (end is None or start < end):
            core.check_open()  # a few pairs from the span's start or end: a short read
            for width in (limit + 8, 8 * limit + 64):  # wider when deletions hid too many
                pairs = first_read(core.read_state, start, end, self.seq, limit, reverse, width)
                if pairs is not None:
                    return pairs
        return core.read_range_at(start, end, reverse, limit, self.seq)

    def read_prefix(self, start: bytes, end: bytes | None, most: int) -> list[tuple[bytes, bytes]] | None:
        if self._closed:
            raise InterfaceError("snapshot is closed")
        core = self._core
        if core.closed:
            core.check_open()
        pairs = None if end is None else short_read(core.read_state, start, end, self.seq, most)
        if pairs is None:  # a source holds many entries of the span (live or not): scan it
            return super().read_prefix(start, end, most)
        return pairs

    def read_prefixes(self, spans: list[tuple[bytes, bytes | None]],
                      most: int) -> list[list[tuple[bytes, bytes]] | None]:
        if self._closed:
            raise InterfaceError("snapshot is closed")
        core = self._core
        core.check_open()
        state, seq = core.read_state, self.seq  # one read state for the whole batch
        out = []
        for start, end in spans:
            pairs = None if end is None else short_read(state, start, end, seq, most)
            out.append(super().read_prefix(start, end, most) if pairs is None else pairs)
        return out

    def range_reader(self, start: bytes, end: bytes | None, reverse: bool = False) -> RangeReader:
        """The merged cursors opened once and kept between reads (range_reader.py)."""
        self._check_open()
        return RangeReader(self._core, start, end, reverse, self.seq, self._check_open)

    def scan_columns(self, start: bytes, end: bytes | None, size: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """No pair built where the sources allow it (column_scan.py)."""
        self._check_open()
        return scan_columns(self._core, start, end, self.seq, size, self._check_open)

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("snapshot is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._core.release_snapshot(self._sid)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
