"""Background work of an `LSMCore`: flushing immutable memtables, compacting, deleting files.

Two daemon threads per store. The flush thread takes the oldest immutable memtable, writes it
as one L0 table (dropping versions no reader can see), then -- under the store lock -- installs
a new Version with that table and the memtable's range tombstones, rewrites the MANIFEST (with
the flushed seq and the oldest WAL segment still needed), and only then deletes the memtable's
WAL segments. The compaction thread asks the picker for a job, runs it without the lock, and
installs its result the same way. Files that leave the current Version are deleted once no
pinned Version (an open scan) lists them. The building itself (merge, encode, write) runs in a
worker process when the store has them, the threads only waiting and installing (worker.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlkv.errors import CorruptionError
from sqlkv.storage.lsm import worker
from sqlkv.storage.lsm.counters import bloom_totals
from sqlkv.storage.lsm.compaction import (
    Compaction,
    CompactionAborted,
    live_tombstones,
    pick_compaction,
    pick_full,
    table_path,
)
from sqlkv.storage.lsm.manifest import Version
from sqlkv.storage.lsm.sstable.builder import TableInfo
from sqlkv.errors import OperationalError

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore
    from sqlkv.storage.lsm.memtable import Memtable


def _gc_horizon(core: LSMCore) -> tuple[list[int], int]:
    """The live snapshot seqs below ``published`` (sorted) and ``published``, the seq every
    version above which is kept, taken under the lock: the published seq, or the start of the
    time-travel window when that is older (history.py), so a flush or compaction keeps all a
    reader within the window may need. It becomes the GC threshold (reads below it are
    refused) before anything is dropped. Snapshots at or above it need nothing more (every
    version above it stays, and the newest at or below it); leaving them out keeps them from
    cutting the stripes gc_entries keeps one version of: a version at or below ``published``
    covered by a range tombstone at or below it is hidden from every such reader."""
    published = core.visible_seq
    try:
        window = core.history.horizon(core.scan_visible)
    except CorruptionError:  # a damaged table holds the timeline: drop nothing more than before
        window = core.gc_threshold
    if window is not None:
        published = min(published, window)
    core.gc_threshold = max(core.gc_threshold, published)
    return sorted(s for s in set(core.snapshots.values()) if s < published), published


def flush_loop(core: LSMCore) -> None:
    while True:
        with core.bg_cond:
            while not core.imm and not core.closing:
                core.bg_cond.wait()
            if core.closing:
                return
            mem = core.imm[0]
        try:
            flush_memtable(core, mem)
        except CompactionAborted:  # closing: the memtable's WAL segments still hold its data
            with core.bg_cond:
                core.stats_counters["flushes_aborted"] += 1
            return
        except BaseException as exc:  # keep the store readable; writers will see the error
            with core.bg_cond:
                core.bg_error = exc
                core.bg_cond.notify_all()
            return


def _stop_check(core: LSMCore) -> Callable[[], bool]:
    """What flushes and compactions poll: stop once `close()` has begun (it must not wait)."""
    return lambda: core.closing


def flush_memtable(core: LSMCore, mem: Memtable) -> None:
    started = time.perf_counter_ns()
    with core.lock:
        snapshots, published = _gc_horizon(core)
        version = core.version
    infos, dropped = _build(core, "flush", worker.build_flush, mem.size, 1, mem.sorted_keys(),
                            mem.data, snapshots, published, version.tombstones + mem.range_tombstones,
                            mem.max_seq, core.opts.block_size)
    with core.bg_cond:
        current = core.version
        levels = [list(level) for level in current.levels]
        levels[0].extend(infos)
        tombstones = current.tombstones + mem.range_tombstones
        core.flushed_seq = max(core.flushed_seq, mem.max_seq)
        core.imm.remove(mem)
        _install(core, levels, tombstones)
        core.stats_counters["flushes"] += 1
        core.stats_counters["flush_bytes"] += sum(i.size for i in infos)
        core.stats_counters["versions_dropped"] += dropped
        for number in mem.wal_numbers:  # the MANIFEST no longer needs them
            _unlink(os.path.join(core.path, f"{number:06d}.log"))
        core.latency["flush"].record(time.perf_counter_ns() - started)
        core.bg_cond.notify_all()


def _build(core: LSMCore, in_worker: str, in_thread: Callable[..., tuple], size: int,
           numbers: int, *args: Any) -> tuple[list[TableInfo], int]:
    """Run a flush or compaction build in a worker process when the store has them, else (or
    when the worker is lost) in this thread; returns the tables and the versions dropped."""
    stop = _stop_check(core)
    if core.builder is not None:
        built = core.builder.run(in_worker, size, lambda: worker.reserve_numbers(core, numbers),
                                 *args, closing=stop)
        if built is not None:
            return built
    return in_thread(core.path, *args, core.new_file_number, stop)


def _install(core: LSMCore, levels: list[list[TableInfo]], tombstones: list) -> None:
    """Make a new current Version and persist it (caller holds the lock)."""
    from sqlkv.storage.lsm.core import ReadState  # core.py imports this module: a real cycle

    for level in levels:
        for info in level:
            core._reader(info.number, info.size)
    tombstones = live_tombstones(levels, tombstones)
    core.version = Version(levels, tombstones, core.readers)
    core.fit_cache()
    core.write_manifest()
    core.read_state = ReadState((core.mem, *reversed(core.imm)), core.version)
    delete_obsolete_files(core)


def delete_obsolete_files(core: LSMCore) -> None:
    """Unlink tables no installed or pinned Version lists (caller holds the lock)."""
    live = core.version.file_numbers()
    for version in core.pinned.values():
        live |= version.file_numbers()
    for number in [n for n in core.readers if n not in live]:
        reader = core.readers.pop(number)  # an in-flight get keeps its reader (and fd) alive until done
        retired = core.retired_bloom
        retired[0] += reader.bloom_negatives
        retired[1] += reader.bloom_positives
        retired[2] += reader.bloom_false_positives
        core.cache.evict_file(number)
        _unlink(table_path(core.path, number))


def compaction_loop(core: LSMCore) -> None:
    pointers: dict[int, bytes] = {}
    while True:
        with core.bg_cond:
            if core.closing:
                return
        try:
            with core.compaction_mutex:
                did_work = run_one_compaction(core, pointers)
        except CompactionAborted:
            with core.bg_cond:
                core.stats_counters["compactions_aborted"] += 1
            return
        except BaseException as exc:
            with core.bg_cond:
                core.bg_error = exc
                core.bg_cond.notify_all()
            return
        if not did_work:
            with core.bg_cond:
                if not core.closing:
                    core.bg_cond.wait(1.0)


def run_one_compaction(core: LSMCore, pointers: dict[int, bytes], full: bool = False) -> bool:
    """Pick and run one job (caller holds ``compaction_mutex``). False when there was none."""
    with core.lock:
        version = core.version
        snapshots, published = _gc_horizon(core)
        safe_seq = min(snapshots, default=published)
        if full:
            job = pick_full(version, core.opts)
        else:
            job = pick_compaction(version, core.opts, safe_seq, pointers, bool(snapshots))
        checked_seq = core.flushed_seq
    if job is None:
        return False
    started, wall = time.perf_counter_ns(), time.time()
    outputs: list[TableInfo] = []
    if job.is_drop:  # open the file now, so a get already headed for it can still read it
        for table in job.inputs:
            version.readers[table.number].load()
    if not job.is_drop and not job.is_move:
        # an L0 output must be one table: L0 is counted in tables, and that is what it reduces
        target = core.opts.target_file_size if job.output_level else 1 << 62
        size = sum(t.size for t in job.all_inputs)
        # outputs are cut at ``target`` and hold no more than the inputs: this many suffice
        numbers = 2 * size // min(target, 1 << 40) + 4

        def in_thread(directory: str, job: Compaction, *rest: Any) -> tuple[list[TableInfo], int]:
            return worker.build_compaction(directory, job, version.readers, *rest)

        outputs, dropped = _build(core, "compact", in_thread, size, numbers, job,
                                  snapshots, published, version.tombstones, target,
                                  core.opts.block_size, checked_seq)
        core.stats_counters["versions_dropped"] += dropped
    with core.bg_cond:
        _install_compaction(core, job, outputs)
        core.stats_counters["compactions"] += 1
        core.stats_counters["compaction_bytes"] += sum(i.size for i in outputs)
        if job.is_drop:
            core.stats_counters["files_dropped_by_tombstone"] += 1
        core.compaction_log.add(_compaction_event(job, outputs, wall, time.perf_counter_ns() - started))
        core.bg_cond.notify_all()
    return True


def _compaction_event(job: Compaction, outputs: list[TableInfo], wall: float, nanos: int) -> dict[str, Any]:
    """One row of ``sqlkv_internal.compactions``."""
    kind = "drop" if job.is_drop else "move" if job.is_move else "merge"
    return {"started": wall, "reason": job.reason, "kind": kind, "level": job.level,
            "output_level": job.output_level, "input_files": len(job.all_inputs),
            "input_bytes": sum(t.size for t in job.all_inputs),
            "output_files": len(job.inputs) if job.is_move else len(outputs),
            "output_bytes": sum(t.size for t in (job.inputs if job.is_move else outputs)),
            "duration_ms": round(nanos / 1e6, 3)}


def _install_compaction(core: LSMCore, job: Compaction, outputs: list[TableInfo]) -> None:
    removed = {t.number for t in job.all_inputs}
    levels = [[t for t in level if t.number not in removed] for level in core.version.levels]
    if job.is_move:
        levels[job.output_level].extend(job.inputs)
    else:
        levels[job.output_level].extend(outputs)
    _install(core, levels, core.version.tombstones)


def wait_for_flushes(core: LSMCore) -> None:
    """Block until every immutable memtable is flushed (flushing inline without threads)."""
    if not core.threads:
        while core.imm:
            flush_memtable(core, core.imm[0])
        return
    with core.bg_cond:
        while core.imm and core.bg_error is None and not core.closing:
            core.bg_cond.wait(0.5)
        if core.bg_error is not None:
            raise OperationalError(f"database {core.path}: background work failed: {core.bg_error}")


def run_pending_compactions(core: LSMCore) -> None:
    """Run the jobs the picker wants now, in this thread, until it wants none."""
    pointers: dict[int, bytes] = {}
    with core.compaction_mutex:
        for _ in range(100_000):  # a bound, not a budget: the picker runs dry long before
            if not run_one_compaction(core, pointers):
                return


def compact_fully(core: LSMCore) -> None:
    """Merge every table into one level, then let the picker tidy up range-tombstone work."""
    pointers: dict[int, bytes] = {}
    with core.compaction_mutex:
        run_one_compaction(core, pointers, full=True)
        for _ in range(1000):
            if not run_one_compaction(core, pointers):
                break


# The figures of engine_stats built from counters the MANIFEST carries: they count from
# ``since`` (the database's creation); the others from ``opened``.
PERSISTED_STATS = ("user_bytes_written", "flush_bytes_written", "compaction_bytes_written",
                   "write_amplification", "gets_reaching_tables", "tables_probed", "read_amplification",
                   "bloom_negatives", "bloom_useful", "bloom_positives", "bloom_false_positives",
                   "bloom_false_positive_rate", "bloom_useful_rate", "flushes", "compactions",
                   "files_dropped_by_range_tombstone", "versions_dropped", "write_stalls",
                   "write_stall_seconds", "write_stops", "write_stop_seconds")


def engine_stats(core: LSMCore) -> dict[str, Any]:
    with core.lock:
        version = core.version
        mems = [core.mem, *core.imm]
        counters = dict(core.stats_counters)
        levels = []
        for i, level in enumerate(version.levels):  # every level, empty ones too (files 0)
            levels.append({"level": i, "files": len(level), "bytes": sum(t.size for t in level),
                           "entries": sum(t.entries for t in level),
                           "tombstones": sum(t.tombstones for t in level)})
        total = sum(t.size for level in version.levels for t in level)
        bottom = version.deepest_nonempty()
        live_estimate = sum(t.size for t in version.levels[bottom]) if bottom else total
        pending = 0
        for i in range(1, len(version.levels) - 1):
            pending += max(0, version.level_bytes(i) - core.opts.level_target(i))
        if len(version.levels[0]) >= core.opts.l0_trigger:
            pending += version.level_bytes(0)
        user = counters["user_bytes"]
        written = counters["flush_bytes"] + counters["compaction_bytes"]
        gets = counters["gets"]
        bloom = bloom_totals(core)
        return {
            "engine": "lsm",
            "path": core.path,
            "since": core.since,
            "opened": core.opened,
            "persisted": PERSISTED_STATS,
            "durability": core.durability,
            "last_seq": core.visible_seq,
            "levels": levels,
            "total_bytes": total,
            "live_bytes_estimate": live_estimate,
            "space_amplification": round(total / live_estimate, 3) if live_estimate else None,
            "user_bytes_written": user,
            "flush_bytes_written": counters["flush_bytes"],
            "compaction_bytes_written": counters["compaction_bytes"],
            "write_amplification": round(written / user, 3) if user else None,
            "gets_reaching_tables": gets,
            "tables_probed": counters["tables_probed"],
            "read_amplification": round(counters["tables_probed"] / gets, 3) if gets else None,
            "bloom_negatives": bloom[0],
            "bloom_useful": bloom[0],
            "bloom_positives": bloom[1],
            "bloom_false_positives": bloom[2],
            # of the gets for keys a table lacks, the share its filter failed to stop
            "bloom_false_positive_rate": round(bloom[2] / (bloom[0] + bloom[2]), 4) if bloom[0] + bloom[2] else None,
            # of the gets that reached a table's filter, the share it answered without a block read
            "bloom_useful_rate": round(bloom[0] / (bloom[0] + bloom[1]), 4) if bloom[0] + bloom[1] else None,
            "block_cache": core.cache.stats(),
            "pending_compaction_bytes": pending,
            "point_tombstones": sum(t.tombstones for level in version.levels for t in level)
            + sum(m.point_tombstones for m in mems),
            "range_tombstones": len(version.tombstones) + sum(len(m.range_tombstones) for m in mems),
            "memtable_bytes": core.mem.size,
            "immutable_memtables": len(core.imm),
            "immutable_memtable_bytes": sum(m.size for m in core.imm),  # frozen, waiting for their flush
            "open_snapshots": len(core.snapshots),
            "gc_ttl": core.history.gc_ttl,
            "gc_threshold_seq": core.gc_threshold,
            "flushes": counters["flushes"],
            "compactions": counters["compactions"],
            "flushes_aborted": counters["flushes_aborted"],
            "compactions_aborted": counters["compactions_aborted"],
            "files_dropped_by_range_tombstone": counters["files_dropped_by_tombstone"],
            "versions_dropped": counters["versions_dropped"],
            "write_stalls": counters["write_stalls"],
            "write_stall_seconds": round(counters["write_stall_seconds"], 3),
            "write_stops": counters["write_stops"],
            "write_stop_seconds": round(counters["write_stop_seconds"], 3),
            "wal_fsyncs": core.wal.syncs if core.wal is not None else 0,
            "background_error": repr(core.bg_error) if core.bg_error else None,
            "build_workers": core.builder.stats() if core.builder is not None else None,
            "ingested": dict(core.ingest_counters),
        }


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["flush_loop", "compaction_loop", "wait_for_flushes", "compact_fully", "engine_stats",
           "delete_obsolete_files"]
