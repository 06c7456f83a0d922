"""The KV interface: the only storage surface the layers above use.

Everything sqlkv stores -- rows, index entries, catalog descriptors -- is an ordered map from
bytes to bytes. A query such as ``SELECT name FROM users WHERE id = 10`` reaches this layer as
one ``get(b"\\xf0\\x89\\x92\\x88")`` (table 104 = 0xf0, index 1 = 0x89, key 10 = 0x92, family 0 = 0x88) against a
`Snapshot`; an INSERT reaches it as one `WriteBatch` with conditional puts for the primary key
and unique indexes, handed to `Engine.write` by the transaction layer at commit.

The interface is deliberately narrow so that it can be implemented over a remote ordered store
(etcd): `scan` is a lazy iterator an implementation may fill page by page, a `Snapshot` is a
sequence number (an etcd revision), and a batch's conditions are a txn-with-compare.

Semantics every engine must share (tests/storage checks them against a dict model):

- keys order bytewise; `scan(start, end)` covers ``start <= key < end`` (``end=None``: no upper
  bound), ascending, or descending with ``reverse=True``; ``limit`` caps the number of pairs.
  Scans are lazy: a scan of a huge range must not materialise it.
- `write(batch)` applies all of a batch or none of it. Its operations apply in order, so a put
  after a ``delete_range`` in the same batch survives. Before applying, every condition is
  checked against the current state; if one fails, `ConditionFailedError` is raised and nothing
  is written.
- every successful write gets a sequence number greater than all before it, returned by
  `write`. A `Snapshot` taken at sequence ``s`` sees exactly the batches numbered ``<= s``, no
  matter what is written, flushed or compacted after.
- an engine is safe to use from many threads; writes are serialised inside the engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from sqlkv.errors import InterfaceError, NotSupportedError
from sqlkv.storage.metrics import Latencies

# Operation codes of a WriteBatch (also their tag in the WAL record format).
OP_PUT = 1
OP_DELETE = 2
OP_DELETE_RANGE = 3


class WriteBatch:
    """An ordered list of puts, deletes and range deletes, plus conditions, applied atomically.

    ``ops`` holds ``(OP_PUT, key, value)``, ``(OP_DELETE, key, None)`` and
    ``(OP_DELETE_RANGE, start, end)`` tuples in the order they were added. ``conditions`` holds
    ``(key, expected)`` pairs: the key's current value must equal ``expected`` (``None``: the key
    must be absent) for the batch to apply.

    ``read_seq`` / ``read_points`` / ``read_ranges`` (set by `validate_reads`) are for a
    `shared <Engine.shared>` engine only: the batch applies only if no key in those spans was
    written by a batch numbered above ``read_seq``.
    """

    __slots__ = ("ops", "conditions", "byte_size", "read_seq", "read_points", "read_ranges")

    def __init__(self) -> None:
        self.ops: list[tuple[int, bytes, bytes | None]] = []
        self.conditions: list[tuple[bytes, bytes | None]] = []
        self.byte_size = 0
        self.read_seq: int | None = None
        self.read_points: list[bytes] = []
        self.read_ranges: list[tuple[bytes, bytes | None]] = []

    def validate_reads(
        self, seq: int, points: list[bytes], ranges: list[tuple[bytes, bytes | None]]
    ) -> None:
        """Apply only if nothing in ``points`` and ``[start, end)`` ``ranges`` changed after ``seq``.

        A shared engine raises `SerializationFailure` (nothing written) when something did.
        """
        self.read_seq = seq
        self.read_points = points
        self.read_ranges = ranges

    def put(self, key: bytes, value: bytes) -> None:
        self.ops.append((OP_PUT, key, value))
        self.byte_size += len(key) + len(value)

    def delete(self, key: bytes) -> None:
        self.ops.append((OP_DELETE, key, None))
        self.byte_size += len(key)

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Delete every key in ``[start, end)``."""
        self.ops.append((OP_DELETE_RANGE, start, end))
        self.byte_size += len(start) + len(end)

    def expect(self, key: bytes, expected: bytes | None) -> None:
        """Add a condition: at apply time ``key`` must hold ``expected`` (None: be absent)."""
        self.conditions.append((key, expected))

    def put_if_absent(self, key: bytes, value: bytes) -> None:
        """Conditional put: only if ``key`` is absent (unique indexes are built on this)."""
        self.expect(key, None)
        self.put(key, value)

    def put_if_equals(self, key: bytes, value: bytes, expected: bytes | None) -> None:
        """Conditional put: only if ``key`` currently holds ``expected``."""
        self.expect(key, expected)
        self.put(key, value)

    def __len__(self) -> int:
        return len(self.ops)

    def __bool__(self) -> bool:
        return bool(self.ops) or bool(self.conditions)

    def __repr__(self) -> str:
        return f"WriteBatch({len(self.ops)} ops, {len(self.conditions)} conditions)"


class KVReader(ABC):
    """Point reads and ordered scans."""

    # True when a lazy `scan` already fetches large pages per round trip (etcd): a reader
    # wanting a range in batches then slices the scan instead of calling `read_range` per batch.
    pages_itself = False

    @abstractmethod
    def get(self, key: bytes) -> bytes | None:
        """The value stored at ``key``, or None."""

    @abstractmethod
    def scan(
        self,
        start: bytes,
        end: bytes | None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Yield ``(key, value)`` for ``start <= key < end`` in key order, lazily."""

    def read_range(self, start: bytes, end: bytes | None, reverse: bool = False,
                   limit: int | None = None) -> list[tuple[bytes, bytes]]:
        """`scan`'s pairs as a list: for a short range read whole (an equality on an index),
        engines skip the machinery a lazy scan needs."""
        return list(self.scan(start, end, reverse, limit))

    def read_prefix(self, start: bytes, end: bytes | None, most: int) -> list[tuple[bytes, bytes]] | None:
        """The pairs of ``[start, end)`` in key order when there are at most ``most``, else
        None: an equality read on an index, which expects a few keys under one prefix
        (engines answer it without a scan's set-up: lsm/shortread.py)."""
        pairs = self.read_range(start, end, False, most + 1)
        return pairs if len(pairs) <= most else None

    def read_prefixes(self, spans: list[tuple[bytes, bytes | None]],
                      most: int) -> list[list[tuple[bytes, bytes]] | None]:
        """`read_prefix` of each of ``spans`` (a lookup join's batch of keys)."""
        read = self.read_prefix
        return [read(start, end, most) for start, end in spans]

    def range_reader(self, start: bytes, end: bytes | None, reverse: bool = False) -> RangeReading:
        """``[start, end)`` read in successive lists (`RangeReading.read`), as a batched scan
        wants it. The default is one `read_range` per read, from just past the last key read;
        an engine that can keep its scan's state between reads (the LSM) overrides it."""
        return PagedRangeReader(self, start, end, reverse)

    def scan_columns(self, start: bytes, end: bytes | None, size: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """``[start, end)`` forward as ``(keys, values)`` lists of at least ``size`` pairs each
        (the last may be shorter), for a bulk reader that wants them apart (CREATE INDEX's
        backfill). The default transposes `range_reader`'s lists; the LSM builds no pair."""
        reader = self.range_reader(start, end)
        try:
            while True:
                batch = reader.read(size)
                if batch:
                    yield columns_of(batch)
                if len(batch) < size:
                    return
        finally:
            reader.close()

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """The values of ``keys``, None for each absent one (sorted keys let an engine share
        more work between neighbours). Engines override it to read them against one state."""
        get = self.get
        return [get(key) for key in keys]


def columns_of(pairs: Iterable[tuple[bytes, bytes]]) -> tuple[list[bytes], list[bytes]]:
    """``(keys, values)`` of ``pairs``."""
    pairs = list(pairs)
    return [key for key, _value in pairs], [value for _key, value in pairs]


class RangeReading(Protocol):
    """One scan handed out in lists: ``read(count)`` gives the next ``count`` pairs (all that
    are left when None), fewer only once the range is exhausted; ``close`` releases it."""

    def read(self, count: int | None = None) -> list[tuple[bytes, bytes]]: ...

    def close(self) -> None: ...


class PagedRangeReader:
    """`KVReader.range_reader`'s default: each read is one `read_range` of what is left."""

    def __init__(self, reader: KVReader, start: bytes, end: bytes | None, reverse: bool) -> None:
        self._reader = reader
        self._lo, self._hi, self._reverse = start, end, reverse
        self._done = end is not None and end <= start

    def read(self, count: int | None = None) -> list[tuple[bytes, bytes]]:
        if self._done:
            return []
        batch = self._reader.read_range(self._lo, self._hi, self._reverse, count)
        if count is None or len(batch) < count:
            self._done = True
        elif batch:
            last = batch[-1][0]
            if self._reverse:
                self._hi = last
            else:
                self._lo = last + b"\x00"  # the smallest key after ``last``
        return batch

    def close(self) -> None:
        self._done = True


class Snapshot(KVReader):
    """A read view fixed at a sequence number. Close it (or use ``with``) to release it."""

    seq: int

    def close(self) -> None:
        """Release the snapshot so the engine may drop the versions only it needed."""

    def changed_since(self, start: bytes, end: bytes | None, seq: int) -> bool:
        """Whether a batch numbered in ``(seq, self.seq]`` wrote a key in ``[start, end)``.

        Shared engines answer exactly (caches of other clients' data use it); the default is
        the conservative "maybe".
        """
        return True

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Engine(KVReader):
    """A storage engine. Reads on the engine itself see the latest committed state."""

    # True for a store other processes write to as well (etcd): the engine then validates a
    # batch's read spans itself (`WriteBatch.validate_reads`), atomically with applying it, and
    # `Snapshot.changed_since` reports other clients' writes. False: every write passes through
    # this process's transaction manager, which validates in memory (the fast path).
    shared: bool = False

    @abstractmethod
    def write(self, batch: WriteBatch) -> int:
        """Apply ``batch`` atomically and durably (per the engine's durability); return its seq.

        Raises `ConditionFailedError` (nothing written) when a condition does not hold.
        """

    def write_nowait(self, batch: WriteBatch) -> int:
        """Apply ``batch`` like `write` but return before it is durable; pair with `wait_durable`.

        Lets a caller that serialises commits (the transaction manager) release its lock before
        the fsync, so concurrent commits share one. Engines without a separate sync step write
        durably here.
        """
        return self.write(batch)

    def wait_durable(self, seq: int) -> None:
        """Block until the batch numbered ``seq`` is durable per the engine's durability mode."""

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """A read view of the current state."""

    def snapshot_as_of(self, when: float) -> Snapshot:
        """A read view of the state at wall-clock time ``when`` (Unix seconds): the newest
        commit stamped at or before it (``AS OF SYSTEM TIME``; see history.py). Raises
        OperationalError before the retention window or the recorded history, DataError in
        the future, NotSupportedError where the engine keeps no timeline."""
        raise NotSupportedError(f"AS OF SYSTEM TIME is not supported by the {type(self).__name__} "
                                f"storage engine: it keeps no timeline of commits")

    @property
    def read_only(self) -> bool:
        """True when the engine refuses writes (opened ``read_only``)."""
        return False

    @property
    @abstractmethod
    def last_seq(self) -> int:
        """The sequence number of the last applied batch (0 for an empty store)."""

    @abstractmethod
    def close(self) -> None:
        """Flush what durability requires and release files and locks. Idempotent."""

    @abstractmethod
    def stats(self) -> dict[str, Any]:
        """Engine figures for humans and the REPL's .stats (a flat-ish JSON-able dict).

        ``since`` (a Unix time) says from when its counters count: the database's creation
        where they persist across restarts, else the engine's opening."""

    def latencies(self) -> Latencies | None:
        """Latency histograms by operation (get, scan, flush, wal_fsync...), None if not kept."""
        return None

    def recent_compactions(self) -> list[dict[str, Any]]:
        """The last compactions, oldest first (empty where there are none)."""
        return []

    def approximate_sizes(self, spans: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]]:
        """``(keys, bytes)`` held in each ``[start, end)`` span, estimated where counting costs.

        This default counts by scanning (exact, and as slow as a scan); an engine with
        per-file metadata answers from that instead (the LSM sums its table blocks).
        """
        out = []
        for start, end in spans:
            keys = size = 0
            for key, value in self.scan(start, end):
                keys += 1
                size += len(key) + len(value)
            out.append((keys, size))
        return out

    def ingest(self, pairs: Iterable[tuple[bytes, bytes]], point_reads: bool = True) -> int:
        """Put every ``(key, value)`` of ``pairs`` -- keys strictly ascending -- as one batch;
        return its seq (the last seq when ``pairs`` is empty).

        For bulk loads (an index backfill, INSERT into an empty table, an import): ``pairs`` is
        streamed, and the LSM writes it straight into tables installed atomically (ingest.py)
        instead of going through WAL and memtable. This default writes one `WriteBatch`, so it
        holds the pairs in memory; engines override it. Unsorted or non-bytes input raises
        InterfaceError and writes nothing. ``pairs`` must not write to this engine itself.
        ``point_reads=False`` says no key of ``pairs`` will be read by an exact-key get (a
        non-unique index's entries, found by range scans only): the LSM then builds no bloom
        filter for them; reads are the same either way.
        """
        batch = WriteBatch()
        for key, value in checked_pairs(pairs):
            batch.put(key, value)
        if not batch:
            return self.last_seq
        return self.write(batch)

    def flush(self) -> None:
        """Persist the memtable (no-op where it means nothing)."""

    def verify(self) -> list[str]:
        """Problems found by re-reading every stored byte against its checksum (``CHECK
        DATABASE``'s storage half); empty when all is well or the engine keeps no files."""
        return []

    def compact(self) -> None:
        """Run compaction to completion (no-op where it means nothing)."""

    def finish_background_work(self) -> None:
        """Finish the flushes and compactions already owed, in the caller's thread.

        Unlike `compact`, which merges everything, this pays only the debt the engine's own
        policy would pay in the background (benchmarks use it to account for a load's full cost).
        """

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PairColumns:
    """Sorted pairs for `Engine.ingest` handed over as columns: an iterable of ``(keys,
    values)`` lists. Iterating it yields the pairs, so every engine takes it; the LSM reads
    the lists as they come, without building (and then transposing) a tuple per pair."""

    def __init__(self, columns: Iterable[tuple[list[bytes], list[bytes]]]) -> None:
        self._columns = iter(columns)

    def columns(self) -> Iterator[tuple[list[bytes], list[bytes]]]:
        return self._columns

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        for keys, values in self._columns:
            if len(keys) != len(values):
                raise InterfaceError(UNEQUAL_COLUMNS)
            yield from zip(keys, values)


UNEQUAL_COLUMNS = "ingest: PairColumns holds something other than equal lists of keys and values"


def checked_pairs(pairs: Iterable[tuple[bytes, bytes]], previous: bytes | None = None,
                  first: int = 0) -> Iterator[tuple[bytes, bytes]]:
    """``pairs`` as they stream by, raising InterfaceError at the first one out of order (keys
    must be strictly ascending) or not a pair of bytes. ``previous``: the key before the first
    pair, numbered ``first``."""
    for count, pair in enumerate(pairs, first):
        try:
            key, value = pair
        except (TypeError, ValueError):
            raise InterfaceError(f"ingest: item {count} is {type(pair).__name__}, not a (key, value) pair") from None
        if type(key) is not bytes or type(value) is not bytes:
            raise InterfaceError(f"ingest: item {count} holds {type(key).__name__} and "
                                 f"{type(value).__name__}; keys and values must be bytes")
        if previous is not None and key <= previous:
            raise InterfaceError(f"ingest: keys must be strictly ascending; item {count} key {key!r} "
                                 f"follows {previous!r}")
        previous = key
        yield key, value


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None: no such key).

    ``scan(prefix, prefix_end(prefix))`` is a prefix scan.
    """
    b = bytearray(prefix)
    while b:
        if b[-1] != 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    return None
