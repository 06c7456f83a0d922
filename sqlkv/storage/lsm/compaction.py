"""Leveled compaction: choosing what to compact (the picker) and doing it (the runner).

Shape: L0 holds flushed memtables (newest first, ranges may overlap); L1..L6 each hold disjoint
tables, each level about ``level_ratio`` times the size of the one above. The picker scores
levels and returns the most urgent job:

1. *range-tombstone work*: a table lying wholly inside a range tombstone that every reader can
   see is dropped from the version without reading it (DROP TABLE costs a MANIFEST write), and a
   table that still holds entries hidden by such a tombstone is rewritten in place;
   With no snapshot open, a table L1.. made mostly of point tombstones is pushed down (or, at
   the bottom, rewritten without them);
2. L0 with ``l0_trigger`` or more tables: all of L0 merges into the overlapping part of L1
   (or, when the L0 tables are disjoint and miss L1 entirely, they just move down). But when
   L0 has reached ``l0_stop`` (writers are stopped; typical right after a crash under load),
   first just enough of the *oldest* L0 tables merge into one L0 table to let writers go: a
   job that reads a few tables and no L1, so the stop lasts a fraction of a full L0 -> L1
   merge. The oldest tables hold the lowest seqs, so the merged table keeps L0's newest-first
   order;
3. a level over its target size: its next table (round robin on key) merges into the next
   level; when nothing there overlaps, the table just moves down (no rewrite).

The runner merges the input tables (``heapq.merge`` over per-table runs ordered by key, then
seq descending) and keeps, per key, only the newest version in each *snapshot stripe*: versions
between two consecutive live snapshots are indistinguishable to every reader except for the
newest. A version is also dropped when a range tombstone in the same stripe covers it, and a
point tombstone is dropped at the bottom (no deeper table overlaps) when no snapshot predates
it. Versions newer than the last published seq are never dropped (a snapshot may still be
taken below them); with time travel on, the caller passes the window's horizon seq as the
"published" seq, so every version a reader within the window may need stays (history.py). Outputs are cut at ``target_file_size`` between keys.
"""

from __future__ import annotations

import heapq
import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from sqlkv.storage.lsm.manifest import NUM_LEVELS, Version
from sqlkv.storage.lsm.rangedel import RangeTombstone, TombstoneIndex
from sqlkv.storage.lsm.sstable.builder import TableBuilder, TableInfo
from sqlkv.storage.lsm.sstable.reader import TableReader, iter_table

Entry = tuple[bytes, int, "bytes | None"]


@dataclass
class CompactionOptions:
    l0_trigger: int = 4
    level_base_bytes: int = 16 * 1024 * 1024
    level_ratio: int = 10
    target_file_size: int = 4 * 1024 * 1024
    block_size: int = 8 * 1024
    l0_stop: int = 36

    def level_target(self, level: int) -> int:
        return self.level_base_bytes * self.level_ratio ** max(0, level - 1)


@dataclass
class Compaction:
    """One job: ``inputs`` (from ``level``) and ``next_inputs`` (from ``output_level``)."""

    reason: str
    level: int
    output_level: int
    inputs: list[TableInfo]
    next_inputs: list[TableInfo] = field(default_factory=list)
    bottom: bool = False
    input_levels: dict[int, int] = field(default_factory=dict)  # table number -> its level

    def __post_init__(self) -> None:
        for table in self.inputs:
            self.input_levels.setdefault(table.number, self.level)
        for table in self.next_inputs:
            self.input_levels.setdefault(table.number, self.output_level)

    @property
    def all_inputs(self) -> list[TableInfo]:
        return self.inputs + self.next_inputs

    @property
    def is_drop(self) -> bool:
        return self.reason == "tombstone-drop"

    @property
    def is_move(self) -> bool:
        return self.reason == "move"


def table_needs(table: TableInfo, tombstone: RangeTombstone) -> bool:
    """Whether ``table`` may hold an entry the tombstone hides (so the tombstone must stay)."""
    start, end, seq = tombstone
    if table.largest < start or table.smallest >= end:
        return False
    if seq <= table.checked_seq:
        return seq in table.needs
    return table.min_seq < seq


def live_tombstones(version_levels: list[list[TableInfo]], tombstones: list[RangeTombstone]) -> list[RangeTombstone]:
    """The tombstones some table still needs; the others can be forgotten."""
    tables = [t for level in version_levels for t in level]
    return [tomb for tomb in tombstones if any(table_needs(t, tomb) for t in tables)]


def _disjoint(tables: list[TableInfo]) -> bool:
    ordered = sorted(tables, key=lambda t: t.smallest)
    return all(a.largest < b.smallest for a, b in zip(ordered, ordered[1:]))


def _is_bottom(version: Version, output_level: int, smallest: bytes, largest: bytes) -> bool:
    return not any(version.overlapping(level, smallest, largest)
                   for level in range(output_level + 1, NUM_LEVELS))


def _span(tables: list[TableInfo]) -> tuple[bytes, bytes]:
    return min(t.smallest for t in tables), max(t.largest for t in tables)


def pick_compaction(version: Version, opts: CompactionOptions, safe_seq: int,
                    pointers: dict[int, bytes], snapshots_open: bool = False) -> Compaction | None:
    """The most urgent job, or None. ``safe_seq``: the oldest seq any reader may read at."""
    job = _pick_tombstone_work(version, safe_seq)
    if job is None and not snapshots_open:
        job = _pick_dense_tombstones(version, safe_seq)
    if job is not None:
        return job
    scores = [(len(version.levels[0]) / opts.l0_trigger, 0)]
    for level in range(1, NUM_LEVELS - 1):
        scores.append((version.level_bytes(level) / opts.level_target(level), level))
    score, level = max(scores)
    if score < 1:
        return None
    if level == 0 and len(version.levels[0]) >= opts.l0_stop:
        oldest = version.levels[0][-(len(version.levels[0]) - opts.l0_stop + 2):]  # newest first
        return Compaction("l0-intra", 0, 0, oldest)
    if level == 0:
        inputs = list(version.levels[0])
        if _disjoint(inputs) and not any(version.overlapping(1, t.smallest, t.largest) for t in inputs):
            return Compaction("move", 0, 1, inputs)  # e.g. a sequential load: no rewrite needed
        lo, hi = _span(inputs)
        next_inputs = version.overlapping(1, lo, hi)
        return Compaction("l0", 0, 1, inputs, next_inputs,
                          bottom=_is_bottom(version, 1, *_span(inputs + next_inputs)))
    return _pick_level(version, level, pointers)


def _pick_level(version: Version, level: int, pointers: dict[int, bytes]) -> Compaction:
    tables = version.levels[level]
    after = pointers.get(level, b"")
    chosen = next((t for t in tables if t.smallest > after), tables[0])
    pointers[level] = chosen.largest
    next_inputs = version.overlapping(level + 1, chosen.smallest, chosen.largest)
    tomb_overlap = any(table_needs(chosen, tomb) for tomb in version.tombstones)
    if not next_inputs and not tomb_overlap and not chosen.tombstones:
        return Compaction("move", level, level + 1, [chosen])
    lo, hi = _span([chosen] + next_inputs)
    return Compaction("size", level, level + 1, [chosen], next_inputs,
                      bottom=_is_bottom(version, level + 1, lo, hi))


def _pick_tombstone_work(version: Version, safe_seq: int) -> Compaction | None:
    for tomb in version.tombstones:
        start, end, seq = tomb
        if seq > safe_seq:
            continue  # a reader may still look below the tombstone
        for level in range(NUM_LEVELS):
            for table in version.levels[level]:
                if not table_needs(table, tomb):
                    continue
                if start <= table.smallest and table.largest < end and table.max_seq < seq:
                    return Compaction("tombstone-drop", level, level, [table])
                # Rewritten in place; an L0 output keeps its place as its seqs stay in range,
                # and keeps its point tombstones (an older L0 table may hold what they hide).
                bottom = level > 0 and _is_bottom(version, level, table.smallest, table.largest)
                return Compaction("tombstone-clean", level, level, [table], bottom=bottom)
    return None


def _pick_dense_tombstones(version: Version, published: int) -> Compaction | None:
    """A table L1.. that is mostly point tombstones (a mass DELETE): push it down, or at the
    bottom rewrite it without them, so scans stop wading through them. Only with no snapshot
    open and every entry published, so the rewrite is sure to drop them (no busy loop)."""
    for level in range(1, NUM_LEVELS):
        for table in version.levels[level]:
            if table.tombstones * 2 <= table.entries or table.max_seq > published:
                continue
            if _is_bottom(version, level, table.smallest, table.largest):
                return Compaction("tombstone-clean", level, level, [table], bottom=True)
            if level + 1 < NUM_LEVELS:
                next_inputs = version.overlapping(level + 1, table.smallest, table.largest)
                lo, hi = _span([table] + next_inputs)
                return Compaction("dense-tombstones", level, level + 1, [table], next_inputs,
                                  bottom=_is_bottom(version, level + 1, lo, hi))
    return None


def pick_full(version: Version, opts: CompactionOptions) -> Compaction | None:
    """Everything into one level (the `compact()` call): the level whose target fits it all."""
    inputs = [t for level in version.levels for t in level]
    if not inputs:
        return None
    total = sum(t.size for t in inputs)
    output = max(1, version.deepest_nonempty())
    while output < NUM_LEVELS - 1 and opts.level_target(output) < total:
        output += 1
    levels = {t.number: level for level, tables in enumerate(version.levels) for t in tables}
    return Compaction("full", 0, output, inputs, [], bottom=True, input_levels=levels)


# -- the runner ---------------------------------------------------------------------------


def merged_entries(runs: list[Iterable[Entry]]) -> Iterator[Entry]:
    """Merge sorted runs of ``(key, seq, value)`` into (key ascending, seq descending) order."""
    if len(runs) == 1:
        yield from runs[0]
        return
    keyed = [((k, -s, v) for k, s, v in run) for run in runs]
    for key, neg_seq, value in heapq.merge(*keyed):
        yield key, -neg_seq, value


def input_runs(job: Compaction, readers: dict[int, TableReader]) -> list[Iterable[Entry]]:
    """Sorted runs: each L0 table alone; the tables of one level L1.. chained by key."""
    by_level: dict[int, list[TableInfo]] = {}
    for table in job.all_inputs:
        by_level.setdefault(job.input_levels.get(table.number, job.level), []).append(table)
    runs: list[Iterable[Entry]] = []
    for level, tables in sorted(by_level.items()):
        if level == 0:
            tables.sort(key=lambda t: t.max_seq, reverse=True)
            runs.extend(iter_table(readers[t.number]) for t in tables)
        else:
            tables.sort(key=lambda t: t.smallest)
            runs.append(_chain([readers[t.number] for t in tables]))
    return runs


def _chain(readers: Iterable[TableReader]) -> Iterator[Entry]:
    for reader in readers:
        yield from iter_table(reader)


def gc_entries(entries: Iterable[Entry], snapshots: list[int], published_seq: int,
               tombs: TombstoneIndex, bottom: bool, stats: dict,
               should_stop: Callable[[], bool] | None = None) -> Iterator[tuple]:
    """Drop what no reader can see; yield ``(key, seq, value, tombstone seqs still needed)``.

    ``should_stop`` is polled every 4096 *input* entries (a run of dropped versions yields
    nothing for a long time) and raises `CompactionAborted` when it says so.
    """
    nsnap = len(snapshots)
    prev_key = None
    prev_stripe = -1
    dropped = 0
    seen = 0
    for key, seq, value in entries:
        seen += 1
        if not seen & 0xFFF and should_stop is not None and should_stop():
            raise CompactionAborted()
        if seq > published_seq:
            stripe = -2 - seq  # unpublished versions each form their own stripe
            limit = seq
        elif nsnap:
            stripe = bisect_left(snapshots, seq)
            limit = snapshots[stripe] if stripe < nsnap else published_seq
        else:
            stripe, limit = 0, published_seq
        if key == prev_key:
            if stripe == prev_stripe:
                dropped += 1
                continue
        else:
            prev_key = key
        prev_stripe = stripe
        needed = None
        if tombs:
            above = tombs.covering_above(key, seq)
            if above:
                if above[0] <= limit:
                    dropped += 1
                    continue
                needed = above
        if value is None and bottom and stripe == 0:
            dropped += 1
            continue
        yield key, seq, value, needed
    stats["dropped"] = stats.get("dropped", 0) + dropped


def write_tables(entries: Iterable[tuple], directory: str, new_number: Callable[[], int],
                 target_size: int, block_size: int, checked_seq: int,
                 should_stop: Callable[[], bool],
                 path_of: Callable[[int], str] | None = None) -> list[TableInfo]:
    """Write the entries into tables of about ``target_size``, cut between keys.

    ``path_of`` names the file of a table number (default: its place in ``directory``; a
    worker process writes elsewhere and the engine renames, see worker.py)."""
    if path_of is None:
        path_of = lambda number: table_path(directory, number)  # noqa: E731
    infos: list[TableInfo] = []
    builder: TableBuilder | None = None
    needs: set[int] = set()
    prev_key = None
    count = 0
    try:
        for key, seq, value, needed in entries:
            if builder is None:
                number = new_number()
                builder = TableBuilder(path_of(number), number, block_size)
            elif key != prev_key and builder.estimated_size >= target_size:
                infos.append(builder.finish(checked_seq, sorted(needs)))
                number = new_number()
                builder = TableBuilder(path_of(number), number, block_size)
                needs = set()
            builder.add(key, seq, value)
            if needed:
                needs.update(needed)
            prev_key = key
            count += 1
            if not count & 0xFFF and should_stop():
                raise CompactionAborted()
        if builder is not None:
            infos.append(builder.finish(checked_seq, sorted(needs)))
            builder = None
    except BaseException:
        if builder is not None:
            builder.abandon()
        for info in infos:
            _unlink(path_of(info.number))
        raise
    return infos


class CompactionAborted(Exception):
    """The engine is closing: a flush or compaction stopped early; its partial outputs were
    removed (and a crash before that leaves only files no MANIFEST lists, deleted at open)."""


def table_path(directory: str, number: int) -> str:
    return os.path.join(directory, f"{number:06d}.sst")


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
