"""The hash join's memory bound: partitions spilled to temporary files (a grace hash join).

A `HashJoin` keeps at most `HASH_JOIN_MEMORY_ROWS` rows of its build side in its hash table.
When the build input holds more, the join goes over to partitions: every build row and then
every probe row is written to one of `PARTITIONS` anonymous temporary files (spill.py) chosen by the hash of its
join key (pickled in chunks of `CHUNK_ROWS`), and the partitions are joined one at a time, each
with a hash table of about 1/`PARTITIONS` of the build side. Rows with equal keys land in the
same partition, so each partition is a complete join of its keys: inner and outer joins keep
their meaning (a partition's unmatched rows are unmatched overall). Rows with a NULL key match
nothing and go to no partition (an outer join pads them at once). Memory then holds one
partition's build rows plus a chunk buffer per partition; the order of the output rows differs
from the in-memory join's, which SQL does not promise without ORDER BY.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from sqlkv.sql.exec.spill import dump_chunk, new_spill_file, read_chunks

HASH_JOIN_MEMORY_ROWS = 250_000  # build rows held in memory before the join partitions
PARTITIONS = 16
CHUNK_ROWS = 1024  # rows per pickle record (and per partition's write buffer)

KeyFn = Callable[[tuple], tuple | None]


class SpillFiles:
    """``PARTITIONS`` append-only row files (anonymous temporary files, spill.py)."""

    def __init__(self, name: str) -> None:
        self.what = f"hash join ({name} side)"
        self.files: list[IO[bytes]] = []
        try:
            for _ in range(PARTITIONS):
                self.files.append(new_spill_file(self.what))
        except BaseException:
            self.close()
            raise
        self.buffers: list[list[tuple]] = [[] for _ in range(PARTITIONS)]

    def add(self, part: int, row: tuple) -> None:
        buf = self.buffers[part]
        buf.append(row)
        if len(buf) >= CHUNK_ROWS:
            dump_chunk(self.files[part], buf, self.what)
            self.buffers[part] = []

    def finish(self) -> None:
        for part, buf in enumerate(self.buffers):
            if buf:
                dump_chunk(self.files[part], buf, self.what)
        self.buffers = []

    def close(self) -> None:
        for f in self.files:
            f.close()

    def read(self, part: int) -> Iterator[tuple]:
        return read_chunks(self.files[part])


def partitioned(rows: Iterable[tuple], key: KeyFn, files: SpillFiles,
                on_null: Callable[[tuple], tuple | None]) -> Iterator[tuple]:
    """Write ``rows`` to their partitions; yields what ``on_null`` makes of a NULL-key row
    (an outer join's padded row), when it makes anything."""
    for row in rows:
        k = key(row)
        if k is None:
            padded = on_null(row)
            if padded is not None:
                yield padded
            continue
        files.add(hash(k) % PARTITIONS, row)
    files.finish()


def grace_join(build_rows: Iterable[tuple], probe_rows: Iterable[tuple], build_key: KeyFn,
               probe_key: KeyFn, join_partition: Callable[[Iterator[tuple], Iterator[tuple]], Iterator[tuple]],
               pad_build: Callable[[tuple], tuple | None], pad_probe: Callable[[tuple], tuple | None],
               ) -> Iterator[tuple]:
    """Partition both inputs to disk, then ``join_partition(build, probe)`` one partition at a
    time; ``pad_*`` give the padded row of a NULL-key row that an outer join keeps (else None)."""
    build_files = SpillFiles("build")
    probe_files = None
    try:
        yield from partitioned(build_rows, build_key, build_files, pad_build)
        probe_files = SpillFiles("probe")
        yield from partitioned(probe_rows, probe_key, probe_files, pad_probe)
        for part in range(PARTITIONS):
            yield from join_partition(build_files.read(part), probe_files.read(part))
    finally:  # the consumer may stop early (LIMIT): the files go when closed
        build_files.close()
        if probe_files is not None:
            probe_files.close()


def none(_row: tuple) -> Any:
    return None
