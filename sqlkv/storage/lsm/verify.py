"""Re-read every live file against its checksums: the storage half of ``CHECK DATABASE``.

Recovery reads the WAL once, at open, and table blocks are read only when a query needs them,
so damage that happens while a database is open (or sits in a block no query touched) would
otherwise stay hidden until the worst moment. `verify_files` walks what the current state
depends on -- the live WAL segments, as recovery would read them, and every block of every
live table -- and returns problems as text naming the file and offset; it never raises for
damage it finds.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sqlkv.errors import CorruptionError
from sqlkv.storage.lsm.sstable.reader import iter_table
from sqlkv.storage.lsm.wal import SegmentReader
from sqlkv.storage.lsm.core import wal_path

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore
    from sqlkv.storage.lsm.manifest import Version


def verify_files(core: LSMCore) -> list[str]:
    with core.lock:
        segments = sorted({n for m in [*core.imm, core.mem] for n in m.wal_numbers})
        version = core.version
        wal = core.wal
        # bytes of whole records the writer has put in its segment so far: a tail shorter
        # than that is damage, not a write in progress
        written = (wal.path, wal.whole_bytes) if wal is not None else ("", 0)
        version.pins += 1
        core.pinned[id(version)] = version
    try:
        problems = _verify_segments([wal_path(core.path, n) for n in segments], written)
        problems += _verify_tables(version)
    finally:
        core.unpin(version)
    return problems


def _verify_segments(paths: list[str], written: tuple[str, int]) -> list[str]:
    """The segments in order: each readable, and batch seqs running on without a gap."""
    problems = []
    prev_end: int | None = None
    for i, path in enumerate(paths):
        if not os.path.exists(path):
            problems.append(f"WAL segment {path} is missing")
            prev_end = None
            continue
        reader = SegmentReader(path, newest=i == len(paths) - 1)
        try:
            for offset, base_seq, count, _ops in reader.records():
                if prev_end is not None and base_seq != prev_end + 1:
                    problems.append(f"WAL {path} at offset {offset}: batch {base_seq} follows batch "
                                    f"{prev_end}; the batches between are missing")
                prev_end = base_seq + count - 1
            if reader.torn and path == written[0] and reader.valid_end < written[1]:
                problems.append(f"WAL {path} is damaged at offset {reader.valid_end}: records "
                                f"written up to offset {written[1]} no longer read back")
        except (CorruptionError, OSError) as exc:
            problems.append(str(exc))
            prev_end = None
    return problems


def _verify_tables(version: Version) -> list[str]:
    """Every block of every live table decodes, and holds what the MANIFEST says it does."""
    problems = []
    for level, tables in enumerate(version.levels):
        for info in tables:
            reader = version.readers[info.number]
            try:
                entries = 0
                for key, _seq, _value in iter_table(reader):
                    if not info.smallest <= key <= info.largest:
                        problems.append(f"table {reader.path} (L{level}) holds a key outside the "
                                        f"range the MANIFEST gives it")
                        break
                    entries += 1
                else:
                    if entries != info.entries:
                        problems.append(f"table {reader.path} (L{level}) holds {entries} entries; "
                                        f"the MANIFEST says {info.entries}")
            except (CorruptionError, OSError) as exc:
                problems.append(str(exc))
    return problems
