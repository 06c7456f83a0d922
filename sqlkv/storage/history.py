"""Time travel: which commit was the newest at a given wall-clock time, and the retention window.

``SELECT * FROM t AS OF SYSTEM TIME '-5s'`` needs two things from an engine that only knows
sequence numbers:

1. *The timeline*: a map from wall-clock time to commit seqs. While history is on, the engine
   appends one extra put to every batch it writes, inside its write lock where the batch's seq
   is known (`History.stamp`)::

       /Table/4/1/<commit time: µs since the Unix epoch, 8 bytes big-endian>  ->  <batch seq, 8 bytes big-endian>

   The commit time is the engine clock when the batch is applied, forced to grow by at least
   one microsecond per batch. Because the sample travels in the batch itself (the same WAL
   record, the same memtable, the same tables), recovery keeps a sample exactly when it keeps
   the batch: a time never maps to a seq including a commit stamped after it, and a commit is
   stamped before it is acknowledged, so every time after its acknowledgement maps to a seq
   that includes it. Time ``T`` reads at the seq of the newest sample stamped ``<= T``.
2. *The retention window* ``gc_ttl`` (seconds; 0, the engines' default, turns history off; SQL
   databases open with `DEFAULT_GC_TTL`): the
   engine's garbage collection (LSM flush and compaction, the memory engine's version pruning)
   treats the seq of the newest sample at or before ``now - gc_ttl`` -- the *horizon* -- like
   the published seq: it keeps every version above it and the newest one at or below it, and
   drops the rest. The highest horizon ever used is the *GC threshold*: reads below it are
   refused, as the versions they need may be gone (the LSM keeps it in its MANIFEST).

Samples older than the horizon are removed now and then with one range delete carried by a
later batch (so the timeline does not grow without bound). A database written while history
was off has commits without samples; the first writable open with history on clears the old
samples, so its history begins then.

The timeline lives in system table 4 (ids below 100 are the system's, see keys.md) so it sorts
apart from user data, and the storage layer writes it without the SQL key codec: the timestamp
and seq are plain big-endian integers.
"""

from __future__ import annotations

import datetime as dt
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlkv.errors import CorruptionError, DataError, NotSupportedError, OperationalError
from sqlkv.storage.kv import OP_DELETE_RANGE, OP_PUT

TIMELINE = b"\x8c\x89"  # /Table/4/1
TIMELINE_END = b"\x8c\x8a"
# Ten minutes: long enough to look back past a mistake noticed right away, or to run a long
# consistent read or export while writers go on; short enough that an update-heavy workload
# keeps only minutes of old versions (every version written inside the window stays on disk
# or, for ``:memory:``, in memory). CockroachDB keeps 4h (25h before 23.1) for backups; an
# embedded database has no backup schedule to serve.
DEFAULT_GC_TTL = 600.0
_U64 = struct.Struct(">Q")

Op = tuple[int, bytes, "bytes | None"]
# scan(start, end, reverse, limit) over the engine's latest state
Scan = Callable[[bytes, "bytes | None", bool, "int | None"], Iterator[tuple[bytes, bytes]]]


def sample_key(micros: int) -> bytes:
    return TIMELINE + _U64.pack(micros)


def _micros_of(key: bytes) -> int:
    return _U64.unpack_from(key, len(TIMELINE))[0]


def _seq_of(value: bytes) -> int:
    return _U64.unpack(value)[0]


def check_gc_ttl(gc_ttl: object) -> float:
    """``gc_ttl`` as seconds (>= 0); ProgrammingError for anything else."""
    from sqlkv.errors import ProgrammingError

    if isinstance(gc_ttl, bool) or not isinstance(gc_ttl, (int, float)) or not gc_ttl >= 0 \
            or gc_ttl == float("inf"):
        raise ProgrammingError(f"gc_ttl must be a number of seconds >= 0 (0 turns time travel off), "
                               f"not {gc_ttl!r}")
    return float(gc_ttl)


def describe_time(when: float) -> str:
    return dt.datetime.fromtimestamp(when, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00:00")


@dataclass
class History:
    """An engine's timeline stamping and retention window (one per engine)."""

    gc_ttl: float = DEFAULT_GC_TTL
    clock: Callable[[], float] = time.time
    last_micros: int = 0  # the newest sample's time: stamps only grow
    reset_pending: bool = False  # samples predate commits made with history off: clear them
    next_prune: float = 0.0

    @property
    def enabled(self) -> bool:
        return self.gc_ttl > 0

    # -- writing ------------------------------------------------------------------------------

    def opened(self, scan: Scan, last_seq: int) -> None:
        """Catch up with the stored timeline at open (``last_seq``: the newest batch)."""
        newest = newest_sample(scan, None)
        if newest is not None:
            self.last_micros = max(self.last_micros, newest[0])
        # commits after the newest sample were made with history off: their times are unknown
        self.reset_pending = newest is not None and newest[1] < last_seq

    def stamp(self, scan: Scan, seq_with: Callable[[int], int]) -> list[Op]:
        """The ops to append to a batch being written: maybe a range delete of samples no
        reader needs any more, then this batch's sample. ``seq_with(n)``: the seq the batch
        gets when ``n`` ops are appended to it."""
        now = self.clock()
        micros = max(int(now * 1_000_000), self.last_micros + 1)
        self.last_micros = micros
        ops: list[Op] = []
        if self.reset_pending:
            ops.append((OP_DELETE_RANGE, TIMELINE, TIMELINE_END))
            self.reset_pending = False
        elif now >= self.next_prune:
            self.next_prune = now + max(self.gc_ttl / 4, 1.0)
            try:
                prune = self._prune_op(scan, now)
            except CorruptionError:  # a damaged table: commits go on, the samples stay
                prune = None
            if prune is not None:
                ops.append(prune)
        seq = seq_with(len(ops) + 1)
        ops.append((OP_PUT, sample_key(micros), _U64.pack(seq)))
        return ops

    def _prune_op(self, scan: Scan, now: float) -> Op | None:
        """Delete the samples older than the horizon sample (which stays: it maps the oldest
        times of the window)."""
        horizon = newest_sample(scan, self._cutoff_micros(now))
        if horizon is None:
            return None
        oldest = next(iter(scan(TIMELINE, TIMELINE_END, False, 1)), None)
        if oldest is None or oldest[0] >= sample_key(horizon[0]):
            return None
        return (OP_DELETE_RANGE, TIMELINE, sample_key(horizon[0]))

    def _cutoff_micros(self, now: float) -> int:
        return int((now - self.gc_ttl) * 1_000_000)

    # -- garbage collection ------------------------------------------------------------------

    def horizon(self, scan: Scan) -> int | None:
        """The lowest seq a reader within the window may read at (None: history is off or
        nothing is stamped yet, so no reader can travel back)."""
        if not self.enabled:
            return None
        found = newest_sample(scan, self._cutoff_micros(self.clock()))
        if found is not None:
            return found[1]
        # the whole recorded history is inside the window: keep from just below its first commit
        first = next(iter(scan(TIMELINE, TIMELINE_END, False, 1)), None)
        return None if first is None else _seq_of(first[1]) - 1

    # -- reading ------------------------------------------------------------------------------

    def resolve(self, scan: Scan, when: float, threshold: int, last_seq: int) -> int:
        """The seq a read ``AS OF SYSTEM TIME when`` (Unix seconds) sees, or a clear error."""
        if not self.enabled:
            raise NotSupportedError("AS OF SYSTEM TIME needs the retention window: this database was "
                                    "opened with gc_ttl=0, which keeps no old versions")
        now = self.clock()
        if when != when or when in (float("inf"), float("-inf")):
            raise DataError(f"AS OF SYSTEM TIME {when!r} is not a time")
        if when > now:
            raise DataError(f"AS OF SYSTEM TIME {describe_time(when)} is in the future "
                            f"(the database clock says {describe_time(now)})")
        cutoff = now - self.gc_ttl
        if when < cutoff:
            raise OperationalError(
                f"AS OF SYSTEM TIME {describe_time(when)} is before the GC threshold "
                f"{describe_time(cutoff)}: versions older than gc_ttl={self.gc_ttl:g}s are not kept")
        newest = newest_sample(scan, None)
        if newest is not None and newest[1] < last_seq:
            raise OperationalError("AS OF SYSTEM TIME: the timeline is incomplete (the database was "
                                   "last written with gc_ttl=0); open it for writing with gc_ttl > 0")
        found = newest_sample(scan, int(when * 1_000_000))
        if found is None or found[1] < threshold:
            raise OperationalError(self._too_old(scan, when, threshold))
        return found[1]

    def _too_old(self, scan: Scan, when: float, threshold: int) -> str:
        """Why ``when`` has no readable state: it is older than the oldest readable sample,
        because garbage collection passed it (the oldest sample is at or below the GC
        threshold) or because the recorded history begins later."""
        samples = ((_micros_of(k), _seq_of(v)) for k, v in scan(TIMELINE, TIMELINE_END, False, None))
        first = next(samples, None)
        readable = first if first is not None and first[1] >= threshold else \
            next((s for s in samples if s[1] >= threshold), None)
        if readable is None:
            return f"AS OF SYSTEM TIME {describe_time(when)}: nothing is readable yet (no commit recorded)"
        oldest = describe_time(readable[0] / 1e6)
        if first is not None and first[1] > threshold:
            return (f"AS OF SYSTEM TIME {describe_time(when)} is before the database's recorded "
                    f"history, which begins at {oldest}")
        return (f"AS OF SYSTEM TIME {describe_time(when)} is before the GC threshold: garbage "
                f"collection already dropped the versions it needs (the oldest readable time is {oldest})")


def timeline_samples(reader) -> Iterator[tuple[int, int]]:
    """``(micros, seq)`` of every sample ``reader`` (a KVReader) holds, oldest first."""
    for key, value in reader.scan(TIMELINE, TIMELINE_END):
        yield _micros_of(key), _seq_of(value)


def newest_sample(scan: Scan, at_or_before: int | None) -> tuple[int, int] | None:
    """``(micros, seq)`` of the newest sample stamped at or before ``at_or_before`` µs
    (None: the newest of all), or None when there is none."""
    end = TIMELINE_END if at_or_before is None else sample_key(max(0, at_or_before + 1))
    if at_or_before is not None and at_or_before < 0:
        return None
    for key, value in scan(TIMELINE, end, True, 1):
        return _micros_of(key), _seq_of(value)
    return None
