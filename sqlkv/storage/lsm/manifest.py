"""Versions (the set of live SSTables) and the MANIFEST file that persists the current one.

A `Version` is immutable: the tables of each level (L0 newest first and possibly overlapping;
L1.. sorted by key and disjoint), the flushed range tombstones, and the lookup aids derived from
them. A flush or compaction builds the next Version and installs it; readers that pinned an
older one (scans) keep using it, and a table file is deleted only when no installed or pinned
Version lists it.

The MANIFEST is rewritten whole on every change and replaced atomically: write
``MANIFEST.tmp``, fsync it, rename it over ``MANIFEST``, fsync the directory. Layout::

    b"SQLKVMAN" | format_version:u32 | length:u32 | crc32(body):u32 | body
    body = msgpack {next_file, log_number, flushed_seq, levels: [[table row...]...],
                    tombstones: [[start, end, seq]...], wal_numbers: [n...],
                    sealed: [segment, size] | nil, wal_sizes: [[segment, size]...],
                    counters: {name: number}, gc_threshold: seq}

A table row is `TableInfo.to_list()`. ``log_number`` is the oldest WAL segment still needed and
``wal_numbers`` every live segment: a listed segment that is missing at open is corruption,
never a silently shorter history. A clean close records ``sealed = [segment, size]``: that
segment then ends in no torn write, so any damage to it is corruption too. ``wal_sizes`` holds
the final size of every live segment the log has moved on from (at rotation, and at open for
the replayed ones): a truncation of such a segment exactly at a record boundary leaves no torn
record and, when nothing was written after it, no gap in the batch seqs -- only its known size
tells. (MANIFESTs written before ``wal_numbers`` existed lack it;
their logs are still checked by the batch-sequence chain, see `core`.) ``counters`` carries
the engine's cumulative figures (bytes written by users, flushes and compactions, bloom
results...) and ``since``, the time they started counting, across restarts: they are as
current as the last MANIFEST write (every flush, compaction and clean close).
``gc_threshold`` is the highest seq flushes and compactions kept every version above (the
time-travel horizon, history.py); reads at older seqs are refused (absent: 0).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field

import msgpack

from sqlkv.errors import CorruptionError
from sqlkv.storage.lsm import fileio
from sqlkv.storage.lsm.rangedel import RangeTombstone, TombstoneIndex
from sqlkv.storage.lsm.sstable.builder import TableInfo

MANIFEST_NAME = "MANIFEST"
MAGIC = b"SQLKVMAN"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8sIII")
NUM_LEVELS = 7


@dataclass
class ManifestState:
    next_file: int = 1
    log_number: int = 0
    flushed_seq: int = 0
    levels: list[list[TableInfo]] = field(default_factory=lambda: [[] for _ in range(NUM_LEVELS)])
    tombstones: list[RangeTombstone] = field(default_factory=list)
    wal_numbers: list[int] | None = None  # None: written before segments were listed
    sealed: list[int] | None = None  # [segment, size]: the newest segment, closed cleanly
    wal_sizes: dict[int, int] = field(default_factory=dict)  # finished segment -> its final size
    counters: dict[str, float] = field(default_factory=dict)  # figures kept across restarts
    gc_threshold: int = 0  # reads below this seq may miss versions GC dropped (history.py)


def write_manifest(directory: str, state: ManifestState) -> None:
    body = msgpack.packb(
        {
            "next_file": state.next_file,
            "log_number": state.log_number,
            "flushed_seq": state.flushed_seq,
            "levels": [[t.to_list() for t in level] for level in state.levels],
            "tombstones": [list(t) for t in state.tombstones],
            "wal_numbers": list(state.wal_numbers or []),
            "sealed": state.sealed,
            "wal_sizes": [[n, size] for n, size in sorted(state.wal_sizes.items())],
            "counters": state.counters,
            "gc_threshold": state.gc_threshold,
        },
        use_bin_type=True,
    )
    data = HEADER.pack(MAGIC, FORMAT_VERSION, len(body), zlib.crc32(body) & 0xFFFFFFFF) + body
    tmp = os.path.join(directory, MANIFEST_NAME + ".tmp")
    fileio.write_file_durably(tmp, data)
    fileio.replace(tmp, os.path.join(directory, MANIFEST_NAME))
    fileio.sync_dir(directory)


def read_manifest(directory: str) -> ManifestState | None:
    """The persisted state, or None for a new database. CorruptionError names the file."""
    path = os.path.join(directory, MANIFEST_NAME)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    if len(data) < HEADER.size:
        raise CorruptionError(f"MANIFEST {path} is truncated")
    magic, version, length, crc = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise CorruptionError(f"{path} is not a sqlkv MANIFEST")
    if version != FORMAT_VERSION:
        raise CorruptionError(f"MANIFEST {path} has unsupported format version {version}")
    body = data[HEADER.size:]
    if len(body) != length or zlib.crc32(body) & 0xFFFFFFFF != crc:
        raise CorruptionError(f"checksum mismatch in MANIFEST {path}")
    try:
        raw = msgpack.unpackb(body, raw=False, use_list=True)
        levels = [[TableInfo.from_list(row) for row in level] for level in raw["levels"]]
        while len(levels) < NUM_LEVELS:
            levels.append([])
        return ManifestState(
            next_file=int(raw["next_file"]),
            log_number=int(raw["log_number"]),
            flushed_seq=int(raw["flushed_seq"]),
            levels=levels,
            tombstones=[(bytes(s), bytes(e), int(t)) for s, e, t in raw["tombstones"]],
            wal_numbers=[int(n) for n in raw["wal_numbers"]] if "wal_numbers" in raw else None,
            sealed=[int(n) for n in raw["sealed"]] if raw.get("sealed") else None,
            wal_sizes={int(n): int(size) for n, size in raw.get("wal_sizes") or []},
            counters={str(k): v for k, v in (raw.get("counters") or {}).items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool)},
            gc_threshold=int(raw.get("gc_threshold", 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptionError(f"malformed MANIFEST {path}: {exc}") from None


class Version:
    """One immutable set of live tables plus the flushed range tombstones."""

    def __init__(self, levels: list[list[TableInfo]], tombstones: list[RangeTombstone],
                 readers: dict) -> None:
        self.levels = [list(level) for level in levels]
        self.levels[0].sort(key=lambda t: t.max_seq, reverse=True)
        for level in self.levels[1:]:
            level.sort(key=lambda t: t.smallest)
        self.tombstones = list(tombstones)
        self.tomb_index = TombstoneIndex(self.tombstones)
        self.readers = readers  # number -> TableReader (the engine's shared table cache)
        # Lookup aids for L1..: per level, the largest keys (bisect) and the readers.
        self.level_largest = [[t.largest for t in level] for level in self.levels]
        self.level_smallest = [[t.smallest for t in level] for level in self.levels]
        self.pins = 0

    def file_numbers(self) -> set[int]:
        return {t.number for level in self.levels for t in level}

    def overlapping(self, level: int, start: bytes, end_inclusive: bytes | None) -> list[TableInfo]:
        """Tables of ``level`` whose range meets ``[start, end_inclusive]`` (None: unbounded)."""
        return [t for t in self.levels[level]
                if t.largest >= start and (end_inclusive is None or t.smallest <= end_inclusive)]

    def level_bytes(self, level: int) -> int:
        return sum(t.size for t in self.levels[level])

    def deepest_nonempty(self) -> int:
        for level in range(len(self.levels) - 1, -1, -1):
            if self.levels[level]:
                return level
        return 0
