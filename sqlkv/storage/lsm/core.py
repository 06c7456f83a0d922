"""The LSM store behind every `LSMEngine` handle of one directory.

Walking one write through it: ``write(batch)`` checks the batch's conditions against the latest
applied state, takes seqs ``base .. base+n-1`` (one per op), appends one WAL record, applies the
ops to the active memtable and -- for ``durability="full"`` -- waits in group commit for an
fsync covering its record before publishing its seq to readers. When the memtable passes
``memtable_size`` it becomes immutable, a new WAL segment starts, and the flush thread writes it
to an L0 table; the compaction thread then keeps the levels in shape (see compaction.py).

Walking one read: ``get(key)`` takes the published seq, then the read state -- a tuple of
memtables (newest first) and the current `Version` replaced atomically on every change -- and
looks in the memtables (dict lookups), then the L0 tables newest first, then one table per
level (bisect on key ranges), each through its bloom filter and the block cache. The first
version at or below the read seq wins, unless a newer range tombstone covers it. Scans pin the
version and merge cursors (iterators.py).
"""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import chain, islice
from typing import Any

from sqlkv.errors import ConditionFailedError, CorruptionError, InterfaceError, OperationalError
from sqlkv.storage.history import History, check_gc_ttl
from sqlkv.storage.kv import WriteBatch
from sqlkv.storage.lsm import background, counters
from sqlkv.storage.lsm.cache import BlockCache, automatic_capacity, physical_memory
from sqlkv.storage.lsm.compaction import CompactionAborted, CompactionOptions, table_path
from sqlkv.storage.lsm.iterators import LevelCursor, MemCursor, TableCursor, merge, merged_chunks
from sqlkv.storage.lsm.lock import DirectoryLock
from sqlkv.storage.lsm.manifest import ManifestState, Version, read_manifest, write_manifest
from sqlkv.storage.lsm.memtable import Memtable
from sqlkv.storage.lsm.multiget import get_many, visible_value
from sqlkv.storage.lsm.sstable.packed import promoted_table_bytes
from sqlkv.storage.lsm.sstable.reader import TableReader
from sqlkv.storage.lsm.worker import BuildPool
from sqlkv.storage.lsm.wal import DURABILITY_LEVELS, SegmentReader, WalWriter, encode_record
from sqlkv.storage.metrics import EventLog, Latencies

_EMPTY: tuple = ()

def pinned_scan(core: LSMCore, version: Version, sources: tuple[list, list], seq: int,
                reverse: bool) -> Iterator[tuple[bytes, bytes]]:
    """The merged pairs, holding ``version`` pinned until exhausted, closed or collected.

    The caller primes the generator with one ``next()`` (which yields None) so that it sits
    inside the ``try``: from then on closing or collecting it runs the ``finally``.
    """
    try:
        yield None  # type: ignore[misc]
        cursors, tombs = sources
        started = time.perf_counter_ns()
        pairs = merge(cursors, seq, tombs, reverse)
        first = next(pairs, None)  # the seek: the scan's latency is the time to its first pair
        core.latency["scan"].record(time.perf_counter_ns() - started)
        if first is None:
            return
        yield first
        yield from pairs
    finally:
        core.unpin(version)


def wal_path(directory: str, number: int) -> str:
    return os.path.join(directory, f"{number:06d}.log")


class ReadState:
    """What a reader needs, swapped as one object: memtables newest first and the version."""

    __slots__ = ("mems", "version", "l0", "levels", "scan_l0", "scan_levels", "has_tombstones")

    def __init__(self, mems: tuple[Memtable, ...], version: Version) -> None:
        self.mems = mems
        self.version = version
        readers = version.readers
        self.l0 = [(t.smallest, t.largest, readers[t.number]) for t in version.levels[0]]
        self.levels = [
            (version.level_largest[i], version.level_smallest[i], [readers[t.number] for t in level])
            for i, level in enumerate(version.levels) if i > 0 and level
        ]
        self.has_tombstones = bool(version.tombstones)
        # For scans: L0 as (reader, smallest, largest, max_seq), and per non-empty level L1..
        # its largest keys (bisect), smallest keys and the same tuples.
        self.scan_l0 = [(readers[t.number], t.smallest, t.largest, t.max_seq) for t in version.levels[0]]
        self.scan_levels = [
            (version.level_largest[i], version.level_smallest[i],
             [(readers[t.number], t.smallest, t.largest, t.max_seq) for t in level])
            for i, level in enumerate(version.levels) if i > 0 and level
        ]


class LSMCore:
    def __init__(self, path: str, durability: str = "full", cache_size: int | None = None,
                 memtable_size: int = 4 << 20, read_only: bool = False, block_size: int = 8 << 10,
                 target_file_size: int = 4 << 20, level_base_bytes: int = 16 << 20,
                 l0_trigger: int = 4, l0_slowdown: int = 20, l0_stop: int = 36,
                 background_threads: bool = True, background_processes: bool = True,
                 gc_ttl: float = 0.0, clock: Callable[[], float] = time.time) -> None:
        if durability not in DURABILITY_LEVELS:
            raise InterfaceError(f"durability must be one of {', '.join(DURABILITY_LEVELS)}, not {durability!r}")
        self.path = path
        self.durability = durability
        self.read_only = read_only
        self.memtable_size = max(1024, int(memtable_size))
        self.opts = CompactionOptions(l0_trigger=l0_trigger, level_base_bytes=level_base_bytes,
                                      target_file_size=target_file_size, block_size=block_size,
                                      l0_stop=l0_stop)
        self.l0_slowdown, self.l0_stop = l0_slowdown, l0_stop
        # cache_size None: the capacity follows the live tables (`fit_cache`, cache.py)
        self.cache_follows_tables = cache_size is None
        self.memory = physical_memory()
        self.cache = BlockCache(automatic_capacity(0, self.memory) if cache_size is None else cache_size)
        self.history = History(check_gc_ttl(gc_ttl), clock)
        self.gc_threshold = 0  # the highest horizon flushes and compactions dropped versions at
        self.lock = threading.RLock()  # guards state changes: memtables, versions, snapshots
        self.bg_cond = threading.Condition(self.lock)
        self.write_lock = threading.Lock()  # serialises writers
        self._publish_lock = threading.Lock()
        self.compaction_mutex = threading.Lock()  # one compaction at a time
        self.closed = False
        self.closing = False
        self.bg_error: BaseException | None = None
        self.snapshots: dict[int, int] = {}
        self._next_snapshot = 1
        self.pinned: dict[int, Version] = {}
        self.readers: dict[int, TableReader] = {}
        self.stats_counters = {"user_bytes": 0, "flush_bytes": 0, "compaction_bytes": 0,
                               "gets": 0, "tables_probed": 0,
                               "flushes": 0, "compactions": 0, "write_stalls": 0, "write_stops": 0,
                               "write_stall_seconds": 0.0, "write_stop_seconds": 0.0,
                               "flushes_aborted": 0, "compactions_aborted": 0,
                               "versions_dropped": 0, "files_dropped_by_tombstone": 0}
        # bloom results of tables no longer open (their readers' own counts went with them)
        self.retired_bloom = [0, 0, 0]  # useful (negatives), positives, false positives
        self.since = time.time()  # when the persisted counters started counting
        self.opened = self.since  # when the per-process figures (histograms, cache) started
        self.latency = Latencies(("get", "scan", "flush", "wal_fsync"))
        self.compaction_log = EventLog(64)
        self.get_tick = 0  # point reads through the engine; one in SAMPLE_EVERY is timed
        self._lock_file = self._open_directory()
        self._seen = self._fingerprint() if read_only else None  # what refresh() last caught up to
        try:
            self._recover()
        except OSError as exc:  # a full disk or an I/O error while recovering: nothing half-done
            self._lock_file.release()
            raise OperationalError(f"cannot open database {self.path}: {exc.strerror or exc}"
                                   f"{f' ({exc.filename})' if exc.filename else ''}") from None
        except BaseException:
            self._lock_file.release()
            raise
        if self.history.enabled and not read_only:
            try:
                self.history.opened(self.scan_latest, self.visible_seq)
            except CorruptionError:
                pass  # a damaged table: the store still opens (CHECK DATABASE names the file),
                # and time travel reports the damage when it reads the timeline
        # flushes and compactions build their tables in worker processes (worker.py)
        self.builder = BuildPool(path) if background_processes and not read_only else None
        self.ingest_counters = {"ingests": 0, "tables": 0, "bytes": 0}  # ingest.py
        self.threads: list[threading.Thread] = []
        if not read_only and background_threads:
            for name, target in (("flush", background.flush_loop), ("compaction", background.compaction_loop)):
                thread = threading.Thread(target=target, args=(self,), name=f"sqlkv-lsm-{name}", daemon=True)
                thread.start()
                self.threads.append(thread)
        if self.history.reset_pending:
            self.write(WriteBatch())  # clears the samples of the history a gc_ttl=0 run broke

    # -- opening and recovery -------------------------------------------------------------

    def _open_directory(self) -> DirectoryLock:
        if not os.path.isdir(self.path):
            if self.read_only:
                raise OperationalError(f"database {self.path} does not exist")
            try:
                os.makedirs(self.path, exist_ok=True)
            except OSError as exc:
                raise OperationalError(f"cannot create database directory {self.path}: {exc}") from None
        return DirectoryLock(self.path, shared=self.read_only)

    def _recover(self) -> None:
        state = read_manifest(self.path)
        fresh = state is None
        state = state or ManifestState()
        counters.restore(self, state.counters)
        logs, tables = [], []
        for name in os.listdir(self.path):
            stem, _, ext = name.partition(".")
            if stem.isdigit() and ext in ("log", "sst"):
                (logs if ext == "log" else tables).append(int(stem))
        if fresh and tables:
            raise CorruptionError(f"MANIFEST {os.path.join(self.path, 'MANIFEST')} is missing but "
                                  f"the directory holds {len(tables)} table files")
        live = {t.number for level in state.levels for t in level}
        self.next_file = max([state.next_file, *[n + 1 for n in logs + tables]])
        self.flushed_seq = state.flushed_seq
        self.gc_threshold = max(self.gc_threshold, state.gc_threshold)
        if not self.read_only:
            self._remove_leftovers(state, logs, tables, live)
        replay = sorted(n for n in logs if n >= state.log_number)
        self._check_listed_segments(state, logs)
        mem = Memtable(replay)
        last_seq = self._replay(replay, mem, state)
        self.applied_seq = self.visible_seq = last_seq
        dead: list[int] = []
        if not mem.entries and not self.read_only:
            dead, mem.wal_numbers = replay, []  # nothing unflushed: the segments are dead weight
        # The replayed segments are finished (a new one starts below): their sizes, now that
        # any torn tail is cut, are final, and the MANIFEST keeps them.
        self.wal_sizes = {} if self.read_only else {
            n: os.path.getsize(wal_path(self.path, n)) for n in mem.wal_numbers}
        for level in state.levels:
            for info in level:
                reader = self._reader(info.number, info.size)
                if self.read_only:
                    reader.load()  # held open: the writer's compactions may delete the file
        self.version = Version(state.levels, state.tombstones, self.readers)
        self.fit_cache()
        self.mem = mem
        self.imm: list[Memtable] = []
        self.wal: WalWriter | None = None
        if not self.read_only:
            # Every open starts a segment, and the MANIFEST lists it before any record goes in;
            # segments become dead only once a MANIFEST without them is durable.
            number = self.new_file_number()
            self.wal = WalWriter(wal_path(self.path, number), self.durability, last_seq)
            self.wal.fsync_latency = self.latency["wal_fsync"]
            mem.wal_numbers.append(number)
            self.write_manifest()
            for number in dead:
                _unlink(wal_path(self.path, number))
        self.read_state = ReadState((mem,), self.version)
        if not self.read_only and mem.size >= self.memtable_size:
            with self.write_lock:
                self._rotate_memtable()

    def refresh(self, attempts: int = 20) -> None:
        """A read-only opener catches up with the writing process: the newest MANIFEST and WAL.

        The state is rebuilt as at open and swapped in; snapshots taken before keep reading the
        old one. The writer may flush, compact or start a WAL segment meanwhile, deleting a file
        the MANIFEST just read still names: that shows as a missing file, and the rebuild starts
        over (a few times, then the error stands: a real loss looks the same every time).
        """
        if not self.read_only:
            return  # the writer's state is always current
        with self.lock:
            seen = self._fingerprint()
            if seen is not None and seen == self._seen:
                return  # nothing written since: no MANIFEST or WAL segment changed
            saved = dict(vars(self))
            for attempt in range(attempts):
                try:
                    self._recover()
                    self._seen = seen
                    break
                except (CorruptionError, FileNotFoundError):
                    vars(self).update(saved)
                    if attempt == attempts - 1:
                        raise
                    time.sleep(0.01 * (attempt + 1))
            self._drop_unused_readers()

    def _fingerprint(self) -> tuple | None:
        """Names, sizes and times of the MANIFEST and WAL segments: changes when the writer
        commits, flushes or compacts. None when a file vanished while looking (retry later)."""
        try:
            names = sorted(n for n in os.listdir(self.path) if n == "MANIFEST" or n.endswith(".log"))
            stats = [os.stat(os.path.join(self.path, n)) for n in names]
        except FileNotFoundError:
            return None
        return tuple((n, st.st_size, st.st_mtime_ns) for n, st in zip(names, stats))

    def _drop_unused_readers(self) -> None:
        """Close table files no version in use names (only while no snapshot may read them)."""
        if self.snapshots:
            return
        live = {t.number for level in self.version.levels for t in level}
        for number in [n for n in self.readers if n not in live]:
            self.readers.pop(number).close()

    def _check_listed_segments(self, state: ManifestState, logs: list[int]) -> None:
        """A segment the MANIFEST lists but the directory lacks held committed transactions."""
        missing = sorted(set(state.wal_numbers or []) - set(logs))
        if missing:
            names = ", ".join(os.path.basename(wal_path(self.path, n)) for n in missing)
            raise CorruptionError(f"WAL segment(s) {names} of {self.path} are missing: the MANIFEST "
                                  f"lists them as holding committed transactions not yet in tables")

    def _replay(self, replay: list[int], mem: Memtable, state: ManifestState) -> int:
        """Apply the live segments' records to ``mem``; returns the last batch seq.

        Batch seqs run on without a gap from record to record and segment to segment, so a
        record or segment that went missing shows as a jump. Only the newest segment may end
        in a torn record; a writable open cuts that tail off, because once a new segment
        starts after it, it is no longer the newest and the same bytes would read as damage.
        Nor may it if a clean close ``sealed`` it. A segment whose final size the MANIFEST
        knows (sealed, or finished when the log moved on) must have exactly that size: a cut
        at a record boundary leaves no torn record, and no seq gap when nothing came after.
        """
        last_seq = state.flushed_seq
        finished = dict(state.wal_sizes)
        if state.sealed:
            finished[state.sealed[0]] = state.sealed[1]
        prev_end: int | None = None
        for i, number in enumerate(replay):
            path = wal_path(self.path, number)
            newest = i == len(replay) - 1
            if number in finished:
                newest = False
                if os.path.getsize(path) != finished[number]:
                    raise CorruptionError(f"WAL {path} ends at offset {os.path.getsize(path)} but was "
                                          f"finished at offset {finished[number]}: committed "
                                          f"transactions are missing or damaged")
            reader = SegmentReader(path, newest=newest)
            for offset, base_seq, count, ops in reader.records():
                if prev_end is not None and base_seq != prev_end + 1:
                    raise CorruptionError(f"WAL {path} at offset {offset}: batch {base_seq} follows "
                                          f"batch {prev_end}; the batches between are missing")
                prev_end = end_seq = base_seq + count - 1
                if end_seq <= last_seq:
                    continue
                try:
                    mem.apply(ops, base_seq)
                except (ValueError, TypeError) as exc:
                    raise CorruptionError(f"bad operation in WAL {path} (batch seq {base_seq}): {exc}") from None
                last_seq = end_seq
            if reader.torn and not self.read_only:
                _cut_torn_tail(path, reader.valid_end)
        return last_seq

    def _remove_leftovers(self, state: ManifestState, logs: list[int], tables: list[int], live: set[int]) -> None:
        """Files a crash left behind: flushed WAL segments, tables no MANIFEST lists."""
        for number in logs:
            if number < state.log_number:
                _unlink(wal_path(self.path, number))
        for number in tables:
            if number not in live:
                _unlink(table_path(self.path, number))
        _unlink(os.path.join(self.path, "MANIFEST.tmp"))

    def _reader(self, number: int, size: int) -> TableReader:
        reader = self.readers.get(number)
        if reader is None:
            reader = TableReader(table_path(self.path, number), number, size, self.cache)
            self.readers[number] = reader
        return reader

    def new_file_number(self) -> int:
        with self.lock:
            number = self.next_file
            self.next_file += 1
            return number

    def write_manifest(self, sealed: list[int] | None = None) -> None:
        """Persist the current version (caller holds ``lock``); ``sealed`` is ``[segment,
        size]`` of a newest segment a clean close finished."""
        wal_numbers = [n for m in [*self.imm, self.mem] for n in m.wal_numbers]
        self.wal_sizes = {n: size for n, size in self.wal_sizes.items() if n in wal_numbers}
        state = ManifestState(next_file=self.next_file, log_number=min(wal_numbers, default=0),
                              flushed_seq=self.flushed_seq, levels=self.version.levels,
                              tombstones=self.version.tombstones, wal_numbers=sorted(wal_numbers),
                              sealed=sealed, wal_sizes=self.wal_sizes, counters=counters.to_save(self),
                              gc_threshold=self.gc_threshold)
        write_manifest(self.path, state)

    # -- reads ----------------------------------------------------------------------------

    def check_open(self) -> None:
        if self.closed:
            raise InterfaceError(f"database {self.path} is closed")

    def latest(self) -> tuple[ReadState, int]:
        """A read state and the published seq it fully contains (for reads at "latest").

        The state must be the current one when the seq is read: a state taken earlier could
        miss a rotated memtable, one taken later could lack versions a compaction dropped.
        """
        while True:
            state = self.read_state
            seq = self.visible_seq
            if self.read_state is state:
                return state, seq

    def get_at(self, key: bytes, seq: int, state: ReadState | None = None) -> bytes | None:
        """The value of ``key`` at ``seq``; ``state`` defaults to the current read state (right
        for registered snapshots, whose versions compaction keeps)."""
        if state is None:
            state = self.read_state
        found = None
        for mem in state.mems:
            entry = mem.data.get(key)
            if entry is not None:
                if entry.__class__ is tuple:  # one version (see memtable.py)
                    if entry[0] <= seq:
                        found = entry
                        break
                else:
                    found = mem.get(key, seq)
                    if found is not None:
                        break
        if found is None:
            found = self._get_from_tables(state, key, seq)
        return visible_value(state, key, found, seq)

    def get_many_at(self, keys: list[bytes], seq: int) -> list[bytes | None]:
        """`get_at` of each of ``keys``, against one read state (multiget.py)."""
        return get_many(self.read_state, keys, seq, self.stats_counters)

    def timed_get(self, key: bytes, seq: int, state: ReadState | None = None) -> bytes | None:
        """`get_at`, timed into the ``get`` histogram (the handles call it for one get in
        SAMPLE_EVERY, counting ``get_tick`` themselves to spare the others a call)."""
        started = time.perf_counter_ns()
        value = self.get_at(key, seq, state)
        self.latency["get"].record(time.perf_counter_ns() - started)
        return value

    def _get_from_tables(self, state: ReadState, key: bytes, seq: int) -> tuple | None:
        counters = self.stats_counters
        counters["gets"] += 1
        probed = 0
        found = None
        for smallest, largest, reader in state.l0:
            if smallest <= key <= largest:
                probed += 1
                found = reader.get(key, seq)
                if found is not None:
                    break
        if found is None:
            for largest, smallest, readers in state.levels:
                i = bisect_left(largest, key)
                if i < len(largest) and smallest[i] <= key:
                    probed += 1
                    found = readers[i].get(key, seq)
                    if found is not None:
                        break
        counters["tables_probed"] += probed
        return found

    def scan_at(self, start: bytes, end: bytes | None, reverse: bool, limit: int | None,
                seq: int | None) -> Iterator[tuple[bytes, bytes]]:
        """Pairs of ``[start, end)`` at ``seq`` (None: the latest). The version is pinned now,
        not at the first ``next()``: the scan reads the state as of this call."""
        self.check_open()
        if (limit is not None and limit <= 0) or (end is not None and end <= start):
            return iter(_EMPTY)
        with self.lock:
            if seq is None:
                state, seq = self.latest()
            else:
                state = self.read_state
            state.version.pins += 1
            self.pinned[id(state.version)] = state.version
        try:
            sources = self._cursors(state, start, end, reverse)
        except BaseException:
            self.unpin(state.version)
            raise
        if not sources[0]:  # no source can hold a key of the range
            self.unpin(state.version)
            return iter(_EMPTY)
        scan = pinned_scan(self, state.version, sources, seq, reverse)
        next(scan)  # prime: the version is released when the generator ends or is collected
        return islice(scan, limit) if limit is not None else scan

    def read_range_at(self, start: bytes, end: bytes | None, reverse: bool, limit: int | None,
                      seq: int) -> list[tuple[bytes, bytes]]:
        """`scan_at`'s pairs read at once: the version stays pinned only while they are read,
        with no generator holding it."""
        self.check_open()
        if (limit is not None and limit <= 0) or (end is not None and end <= start):
            return []
        with self.lock:
            state = self.read_state
            state.version.pins += 1
            self.pinned[id(state.version)] = state.version
        try:
            started = time.perf_counter_ns()
            cursors, tombs = self._cursors(state, start, end, reverse)
            if not cursors:
                return []
            chunks = merged_chunks(cursors, seq, tombs, reverse)
            first = next(chunks, None)  # the seek, timed as pinned_scan times a scan's
            self.latency["scan"].record(time.perf_counter_ns() - started)
            out: list[tuple[bytes, bytes]] = []
            for chunk in chain([first], chunks) if first is not None else ():
                out.extend(chunk if limit is None else islice(chunk, limit - len(out)))
                if limit is not None and len(out) >= limit:
                    break
            return out
        finally:
            self.unpin(state.version)

    def _cursors(self, state: ReadState, start: bytes, end: bytes | None, reverse: bool) -> tuple[list, list]:
        """One cursor per source that can hold a key of ``[start, end)``: memtables holding
        one, L0 tables whose key range meets it, and per level the tables found by bisect (a
        lone table gets a plain `TableCursor`). A short scan thus opens one or two cursors."""
        cursors: list = [MemCursor(m, start, end, reverse) for m in state.mems
                         if m.data and m.has_keys_in(start, end)]
        for reader, smallest, largest, max_seq in state.scan_l0:
            if largest >= start and (end is None or smallest < end):
                cursors.append(TableCursor(reader, start, end, reverse, max_seq))
        for largest_keys, smallest_keys, tables in state.scan_levels:
            first = bisect_left(largest_keys, start)
            last = first
            count = len(largest_keys)
            while last < count and (end is None or smallest_keys[last] < end):
                last += 1
            if last - first == 1:
                reader, _, _, max_seq = tables[first]
                cursors.append(TableCursor(reader, start, end, reverse, max_seq))
            elif last > first:
                cursors.append(LevelCursor(tables[first:last], start, end, reverse))
        version = state.version
        tombs = [version.tomb_index] if version.tombstones else []
        tombs += [m.tombstone_index() for m in state.mems if m.range_tombstones]
        # only tombstones over the span matter: one elsewhere (a commit's timeline prune) would
        # put every scan on the merging path
        return cursors, [t for t in tombs if t.meets(start, end)]

    def unpin(self, version: Version) -> None:
        with self.lock:
            version.pins -= 1
            if version.pins <= 0:
                self.pinned.pop(id(version), None)
                # A scan collected after close must not touch a directory it no longer owns.
                if version is not self.version and not self.closed:
                    background.delete_obsolete_files(self)

    # -- writes ---------------------------------------------------------------------------

    def write(self, batch: WriteBatch) -> int:
        last = self.write_nowait(batch)
        self.wait_durable(last)
        return last

    def write_nowait(self, batch: WriteBatch) -> int:
        """Check the conditions, append the WAL record, apply the batch; return its seq without
        waiting for the fsync. Under "full" the batch is visible to readers only once durable
        (`wait_durable`, or any later fsync, publishes it)."""
        self.check_open()
        if self.read_only:
            raise OperationalError(f"database {self.path} is open read-only")
        if self.bg_error is not None:
            raise OperationalError(f"database {self.path}: background work failed: {self.bg_error}")
        self._maybe_stall()
        with self.write_lock:
            self.check_open()
            for key, expected in batch.conditions:
                actual = self.get_at(key, self.applied_seq)
                if actual != expected:
                    raise ConditionFailedError(key, actual)
            base = self.applied_seq + 1
            ops = batch.ops
            if self.history.enabled:
                ops = ops + self.stamp_ops(ops, base)
            count = max(1, len(ops))
            last = base + count - 1
            wal = self.wal
            wal.append(encode_record(base, count, ops))  # type: ignore[union-attr]
            mem = self.mem
            with mem.lock:
                mem.apply(ops, base)
            self.applied_seq = last
            wal.note_applied(last)  # type: ignore[union-attr]
            self.stats_counters["user_bytes"] += batch.byte_size
            if self.durability != "full":
                self.visible_seq = last
            try:
                if mem.new_range_tombstones:
                    ranges, mem.new_range_tombstones = mem.new_range_tombstones, []
                    if self._hides_much(ranges):
                        self._rotate_memtable()  # flush soon, so compaction can drop the files
                if self.mem.size >= self.memtable_size:
                    self._rotate_memtable()
            except OperationalError as exc:  # the record is in the old segment, maybe durable
                raise OperationalError(f"{exc}; whether this commit is durable is unknown") from None
        if self.imm and not self.threads:
            background.wait_for_flushes(self)
        return last

    def stamp_ops(self, ops: list, base: int) -> list:
        """The timeline ops (history.py) to append to a batch of ``ops`` numbered from ``base``
        (write lock held); none while history is off."""
        if not self.history.enabled:
            return []
        return self.history.stamp(self.scan_latest, lambda n: base + len(ops) + n - 1)

    def scan_latest(self, start: bytes, end: bytes | None, reverse: bool,
                    limit: int | None) -> Iterator[tuple[bytes, bytes]]:
        """A scan of everything applied (the timeline's reads; the write lock or ``lock`` held
        keeps what it reads current)."""
        return self.scan_at(start, end, reverse, limit, self.applied_seq)

    def wait_durable(self, seq: int) -> None:
        """Block until batch ``seq`` is durable per the durability mode, then publish it (and
        every batch the same fsync covered) to readers. Concurrent waiters share fsyncs."""
        if self.durability != "full" or seq <= self.visible_seq:
            return
        if seq > self.applied_seq:
            raise InterfaceError(f"database {self.path}: no batch numbered {seq} was written "
                                 f"(last is {self.applied_seq})")
        synced = self.wal.sync_seq(seq)  # type: ignore[union-attr]
        with self._publish_lock:
            if synced > self.visible_seq:
                self.visible_seq = synced

    def _hides_much(self, ranges: list[tuple[bytes, bytes]]) -> bool:
        """Whether range deletes cover more table bytes than a memtable holds (DROP TABLE)."""
        covered = 0
        for level in self.version.levels:
            for t in level:
                if any(t.largest >= start and t.smallest < end for start, end in ranges):
                    covered += t.size
        return covered >= self.memtable_size

    def fit_cache(self, ingesting: int = 0) -> None:
        """Size the block cache to the live tables, unless the user gave ``cache_size``, and
        tell it what they would take with every key list decoded (`BlockCache.may_promote`);
        called whenever the current Version changes. ``ingesting``: the bytes of tables an
        ingestion is writing, which it caches as it writes them (a bulk load is read next)."""
        tables = [t for level in self.version.levels for t in level]
        if self.cache_follows_tables:
            table_bytes = sum(t.size for t in tables)
            self.cache.resize(automatic_capacity(table_bytes + ingesting, self.memory))
        self.cache.promoted_need = sum(promoted_table_bytes(t.size, t.entries) for t in tables)

    def _rotate_memtable(self) -> None:
        """Freeze the active memtable and start a new one and a new WAL segment (write lock held)."""
        number = self.new_file_number()
        finished = self.mem.wal_numbers[-1]
        finished_size = self.wal.rotate(wal_path(self.path, number))  # type: ignore[union-attr]
        if self.durability == "full":
            with self._publish_lock:
                self.visible_seq = max(self.visible_seq, self.applied_seq)
        with self.lock:
            self.wal_sizes[finished] = finished_size
            self.imm.append(self.mem)
            self.mem = Memtable([number])
            self.read_state = ReadState((self.mem, *reversed(self.imm)), self.version)
            try:  # list the new segment: from now on its absence is detectable
                self.write_manifest()
            except OSError as exc:
                self.wal.fail(f"could not record the new WAL segment in the MANIFEST: "  # type: ignore[union-attr]
                              f"{exc.strerror or exc}")
            self.bg_cond.notify_all()

    def _maybe_stall(self) -> None:
        """Slow writers while flushes or L0 fall behind; stop them while far behind.

        The thresholds are RocksDB's (slow down at 20 L0 tables, stop at 36): a stop lasts
        as long as an L0 -> L1 compaction of the whole backlog, seconds in Python, and a
        database reopened after a crash often starts with a backlog of about the old limit."""
        l0 = len(self.version.levels[0])
        if len(self.imm) < 2 and l0 < self.l0_slowdown:
            return
        self.stats_counters["write_stalls"] += 1
        started = time.perf_counter()
        if len(self.imm) < 2 and l0 < self.l0_stop:
            time.sleep(0.001)
            self.stats_counters["write_stall_seconds"] += time.perf_counter() - started
            return
        with self.bg_cond:
            while (len(self.imm) >= 2 or len(self.version.levels[0]) >= self.l0_stop) \
                    and not self.closing and self.bg_error is None and self.threads:
                self.bg_cond.wait(0.1)
            waited = time.perf_counter() - started
            self.stats_counters["write_stops"] += 1
            self.stats_counters["write_stop_seconds"] += waited
            self.stats_counters["write_stall_seconds"] += waited

    # -- snapshots ------------------------------------------------------------------------

    def register_snapshot(self) -> tuple[int, int]:
        self.check_open()
        with self.lock:
            sid = self._next_snapshot
            self._next_snapshot += 1
            seq = self.visible_seq
            self.snapshots[sid] = seq
            return sid, seq

    def register_snapshot_as_of(self, when: float) -> tuple[int, int]:
        """A snapshot at the seq time ``when`` maps to (history.py), registered under the lock
        flushes and compactions take their horizon under: either it is in their list, or
        they raised ``gc_threshold`` first and the read is refused."""
        self.check_open()
        with self.lock:
            if self.read_only:
                self.refresh()
            seq = self.history.resolve(self.scan_visible, when, self.gc_threshold, self.visible_seq)
            sid = self._next_snapshot
            self._next_snapshot += 1
            self.snapshots[sid] = seq
            return sid, seq

    def scan_visible(self, start: bytes, end: bytes | None, reverse: bool,
                     limit: int | None) -> Iterator[tuple[bytes, bytes]]:
        return self.scan_at(start, end, reverse, limit, None)

    def release_snapshot(self, sid: int) -> None:
        with self.lock:
            self.snapshots.pop(sid, None)

    # -- maintenance and lifecycle ---------------------------------------------------------

    def flush(self) -> None:
        """Make the memtable an L0 table now and wait for it (and any older ones) to land."""
        self.check_open()
        if self.read_only:
            return
        with self.write_lock:
            if self.mem.entries:
                self._rotate_memtable()
        background.wait_for_flushes(self)

    def finish_background_work(self) -> None:
        self.check_open()
        if self.read_only:
            return
        background.wait_for_flushes(self)
        try:
            background.run_pending_compactions(self)
        except CompactionAborted:
            raise InterfaceError(f"database {self.path} was closed during finish_background_work()") from None

    def compact(self) -> None:
        self.check_open()
        if self.read_only:
            return
        self.flush()
        try:
            background.compact_fully(self)
        except CompactionAborted:
            raise InterfaceError(f"database {self.path} was closed during compact()") from None

    def close(self) -> None:
        if self.closed:
            return
        with self.bg_cond:
            self.closing = True
            self.bg_cond.notify_all()
        if self.builder is not None:
            self.builder.abort()
        for thread in self.threads:
            thread.join()
        with self.compaction_mutex:  # a compact() call in another thread aborts (see above)
            pass
        if self.builder is not None:
            self.builder.shutdown()
        problem = None
        with self.write_lock:
            self.closed = True
            try:
                if self.wal is not None:
                    self.wal.close()
                    if self.wal.failed is None:
                        with self.lock:  # a clean close: the newest segment has no torn tail
                            self.write_manifest(sealed=[self.mem.wal_numbers[-1], self.wal.whole_bytes])
            except (OperationalError, OSError) as exc:
                problem = exc
        with self.lock:
            for reader in self.readers.values():
                reader.close()
        self._lock_file.release()
        if problem is not None:
            raise OperationalError(f"closing {self.path} failed: {problem}") from None

    def stats(self) -> dict[str, Any]:
        return background.engine_stats(self)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _cut_torn_tail(path: str, valid_end: int) -> None:
    """Truncate a segment to its last whole record, durably."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, valid_end)
        os.fsync(fd)
    finally:
        os.close(fd)
