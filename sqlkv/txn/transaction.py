"""One SERIALIZABLE transaction: snapshot reads, buffered writes, read-span tracking.

Walk ``BEGIN; UPDATE accounts SET balance = balance - 10 WHERE id = 1; COMMIT`` through it:

1. ``TxnManager.begin()`` takes an engine snapshot (sequence number ``snapshot_seq``) and wraps
   it in a `Transaction`.
2. The UPDATE reads the row: ``get(k1)`` looks in the write buffer first (read-your-writes); the
   buffer has nothing, so the snapshot answers and ``k1`` joins the read set.
3. It writes the row: ``put(k1, v)`` lands in the buffer only; nothing reaches the engine yet.
   (The SQL layer wraps each statement in ``savepoint()`` / ``release()`` so a failing
   statement can be undone with ``rollback_to()`` without losing the transaction.)
4. ``commit()`` hands the buffer and read set to the manager, which -- under its commit lock --
   checks that no transaction committed after ``snapshot_seq`` wrote a key this one read, then
   applies the whole buffer as one `WriteBatch` (one WAL record). If the check fails the
   transaction is discarded with `SerializationFailure` (SQLSTATE 40001) and the caller retries.

A Transaction belongs to one thread at a time; many threads run their own transactions on one
manager. After commit or rollback every method except ``rollback()`` raises ProgrammingError.
"""

from __future__ import annotations

from collections import Counter
from itertools import islice, repeat
from collections.abc import Callable, Container, Iterator
from typing import TYPE_CHECKING

from sqlkv.encoding import markers as M
from sqlkv.errors import ConditionFailedError, ProgrammingError
from sqlkv.storage.kv import KVReader, Snapshot, WriteBatch, columns_of
from sqlkv.txn.buffer import ABSENT, WriteBuffer
from sqlkv.txn.figures import PREFIX_LEN
from sqlkv.txn.merge import merged_scan
from sqlkv.txn.spans import Intervals, KeySpans, ReadSet

if TYPE_CHECKING:
    from sqlkv.txn.manager import TxnManager


class Transaction(KVReader):
    """Reads see ``snapshot_seq`` plus this transaction's own writes; writes buffer until commit."""

    def __init__(
        self,
        manager: TxnManager,
        txn_id: int,
        snapshot: Snapshot,
        read_only: bool,
        max_bytes: int,
    ) -> None:
        self.txn_id = txn_id
        self.snapshot_seq: int = snapshot.seq
        self.commit_seq: int | None = None  # the engine seq of a commit that wrote something
        self.read_only = read_only
        self.as_of: float | None = None  # the wall-clock time read at (AS OF SYSTEM TIME), if set
        self._manager = manager
        self._snapshot = snapshot
        self._buffer = WriteBuffer(max_bytes)
        self._reads = ReadSet()
        self._callbacks: list[Callable[[], None]] = []
        self._active = True
        # Figures (see figures.py): KV requests, and keys read per raw key prefix.
        self.kv_gets = 0
        self.kv_scans = 0
        self.kv_keys_read = 0
        self.kv_puts = 0
        self._tally: dict[bytes, int] = manager.figures.reads  # shared: keys read per prefix
        # An abandoned transaction (never committed nor rolled back) is released when it is
        # garbage-collected, through the manager's weak reference to it (`TxnManager._registered`)

    # -- state ---------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self._active

    @property
    def manager(self) -> TxnManager:
        """The manager this transaction belongs to (its figures describe the database; sequences
        begin side transactions on it)."""
        return self._manager

    @property
    def write_count(self) -> int:
        """Distinct keys and ranges buffered (what the commit batch will carry)."""
        return self._buffer.write_count

    @property
    def buffered_bytes(self) -> int:
        """Approximate memory held by the buffer (payload plus per-entry overhead)."""
        return self._buffer.byte_size

    @property
    def read_count(self) -> int:
        """Point reads and scans recorded for the commit-time conflict check."""
        return len(self._reads)

    @property
    def shared(self) -> bool:
        """Other processes write to this engine too (etcd): caches must ask `changed_since`."""
        return self._manager._engine().shared

    def changed_since(self, start: bytes, end: bytes | None, seq: int) -> bool:
        """Whether a commit after ``seq`` (up to this snapshot) wrote into ``[start, end)``."""
        self._check_active()
        return self._snapshot.changed_since(start, end, seq)

    def _check_active(self) -> None:
        if not self._active:
            raise ProgrammingError("transaction is no longer active")

    def _check_writable(self) -> None:
        self._check_active()
        if self.read_only:
            raise ProgrammingError("cannot write in a read-only transaction")

    # -- reads ---------------------------------------------------------------------------

    def get(self, key: bytes) -> bytes | None:
        if not self._active:
            self._check_active()
        buffer = self._buffer
        value = buffer.entries.get(key, ABSENT)
        if value is not ABSENT:
            return value  # type: ignore[return-value]  # our own write: nobody else changes it
        if buffer.ranges and buffer.covering_range(key) is not None:
            return None  # inside our own delete_range
        if not self.read_only:
            self._reads.add_point(key)
        self.kv_gets += 1
        prefix = key[:PREFIX_LEN]
        tally = self._tally
        tally[prefix] = tally.get(prefix, 0) + 1
        return self._snapshot.get(key)

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """`get` of each of ``keys``: from the snapshot in one call when this transaction has
        written nothing (else key by key, its own writes winning)."""
        if not self._active:
            self._check_active()
        buffer = self._buffer
        entries = buffer.entries
        if entries or buffer.ranges:
            return [self.get(key) for key in keys]  # own writes to merge in: key by key
        if not self.read_only:
            self._reads.add_points(keys)
        self.kv_gets += len(keys)
        _tally_keys(self._tally, keys)
        return self._snapshot.get_many(keys)

    def read_range(self, start: bytes, end: bytes | None, reverse: bool = False,
                   limit: int | None = None) -> list[tuple[bytes, bytes]]:
        """`scan`'s pairs as a list, read from the snapshot in one call when this transaction
        has written nothing (else through the merging scan)."""
        if not self._active:
            self._check_active()
        buffer = self._buffer
        if buffer.entries or buffer.ranges or (limit is not None and limit <= 0) \
                or (end is not None and end <= start):
            return list(self.scan(start, end, reverse, limit))
        pairs = self._snapshot.read_range(start, end, reverse, limit)
        if not self.read_only:
            scan = self._reads.open_scan(start, end, reverse)
            if limit is not None and len(pairs) >= limit:
                scan.last = pairs[-1][0]  # read up to there, as a scan stopped by its limit
            else:
                scan.exhausted = True
        self.kv_scans += 1
        self.kv_keys_read += len(pairs)
        prefix = start[:PREFIX_LEN]
        tally = self._tally
        tally[prefix] = tally.get(prefix, 0) + len(pairs)
        return pairs

    def read_prefix(self, start: bytes, end: bytes | None, most: int) -> list[tuple[bytes, bytes]] | None:
        """The pairs of ``[start, end)`` this transaction sees when there are at most ``most``,
        else None (the caller reads the span another way). Made for an equality on an index:
        the snapshot answers it as a short prefix read (`Snapshot.read_prefix`), and the span
        recorded for the conflict check is exactly ``[start, end)`` -- nothing when None is
        returned, as the caller's own read of the span records it then. With writes of its own
        buffered, the transaction reads through the merging scan (ours win) as `read_range`
        does, recording what that pulled (up to ``most + 1`` keys)."""
        if not self._active:
            self._check_active()
        buffer = self._buffer
        if buffer.entries or buffer.ranges or end is None or end <= start:
            pairs = self.read_range(start, end, False, most + 1)
            return pairs if len(pairs) <= most else None
        pairs = self._snapshot.read_prefix(start, end, most)
        if pairs is None:
            return None
        if not self.read_only:
            self._reads.add_span(start, end)
        self.kv_scans += 1
        if pairs:
            self.kv_keys_read += len(pairs)
            prefix = start[:PREFIX_LEN]
            tally = self._tally
            tally[prefix] = tally.get(prefix, 0) + len(pairs)
        return pairs

    def read_prefixes(self, spans: list[tuple[bytes, bytes | None]],
                      most: int) -> list[list[tuple[bytes, bytes]] | None]:
        """`read_prefix` of each of ``spans``, read from the snapshot in one call while this
        transaction has written nothing (a lookup join's batch of keys)."""
        if not self._active:
            self._check_active()
        buffer = self._buffer
        if buffer.entries or buffer.ranges or any(end is None or end <= start for start, end in spans):
            return [self.read_prefix(start, end, most) for start, end in spans]
        found = self._snapshot.read_prefixes(spans, most)
        if not self.read_only:
            record = self._reads.add_span
            for span, pairs in zip(spans, found):
                if pairs is not None:
                    record(*span)
        self.kv_scans += len(spans)
        read = sum(len(pairs) for pairs in found if pairs is not None)
        if read:
            self.kv_keys_read += read
            prefix = spans[0][0][:PREFIX_LEN]  # one index's keys: the first span's prefix is theirs
            tally = self._tally
            tally[prefix] = tally.get(prefix, 0) + read
        return found

    def scan(
        self,
        start: bytes,
        end: bytes | None,
        reverse: bool = False,
        limit: int | None = None,
        skip_written_since: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Lazily yield the pairs of ``[start, end)`` this transaction sees.

        The span recorded for the conflict check is what the consumer pulled: up to the last
        key yielded, or the whole range once the scan runs out.

        ``skip_written_since=token`` (an open savepoint) leaves out keys this transaction put
        since that savepoint, even while the scan is running: a statement that writes into the
        range it scans (``UPDATE t SET pk = pk + 1``, ``INSERT INTO t SELECT * FROM t``) then
        never meets its own rows again.
        """
        self._check_active()
        hidden = None
        if skip_written_since is not None:
            hidden = self._buffer.written_since(skip_written_since)
        return self._scan(start, end, reverse, limit, hidden)

    def scan_batches(self, start: bytes, end: bytes | None, reverse: bool,
                     limit: int | None, sizes: Iterator[int]) -> Iterator[list[tuple[bytes, bytes]]]:
        """`scan`'s pairs as lists of ``next(sizes)`` pairs each (the last may be shorter).

        While this transaction has written nothing the lists are successive reads of one
        `range_reader` of the snapshot (the LSM keeps its merged cursors between them); the
        conflict span recorded is one span grown to the last key of each list
        handed out, the same span a lazy scan pulled that far records. Once the buffer holds
        writes the rest of the range is read through the merging scan (our writes win); so is
        a snapshot that pages through its scans itself (etcd: one request per page).
        """
        self._check_active()
        if (limit is not None and limit <= 0) or (end is not None and end <= start):
            return
        if self._buffer.entries or self._buffer.ranges or self._snapshot.pages_itself:
            yield from _sliced(self._scan(start, end, reverse, limit, None), sizes)
            return
        tracker = None if self.read_only else self._reads.open_scan(start, end, reverse)
        lo, hi = start, end
        remaining = limit
        self.kv_scans += 1
        tally = self._tally
        prefix = start[:PREFIX_LEN]
        reader = self._snapshot.range_reader(start, end, reverse)
        try:
            while True:
                buffer = self._buffer
                if buffer.entries or buffer.ranges:  # written since the last batch
                    reader.close()
                    yield from _sliced(self._scan(lo, hi, reverse, remaining, None), sizes)
                    return
                want = next(sizes) if remaining is None else min(next(sizes), remaining)
                batch = reader.read(want)
                self.kv_keys_read += len(batch)
                tally[prefix] = tally.get(prefix, 0) + len(batch)
                if len(batch) < want or (remaining is not None and remaining == len(batch)):
                    if tracker is not None:
                        if len(batch) < want:
                            tracker.exhausted = True
                        elif batch:
                            tracker.last = batch[-1][0]
                    if batch:
                        yield batch
                    return
                last = batch[-1][0]
                if tracker is not None:
                    tracker.last = last
                if remaining is not None:
                    remaining -= len(batch)
                if reverse:
                    hi = last
                else:
                    lo = last + b"\x00"  # the smallest key after ``last``
                yield batch
                if not self._active:  # the snapshot is closed once the transaction ends
                    self._check_active()
        finally:
            reader.close()

    def scan_columns(self, start: bytes, end: bytes | None, size: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """`scan_batches`' pairs, forward and unlimited, as ``(keys, values)`` lists of at least
        ``size`` pairs each (the last may be shorter), for a bulk reader that wants them apart
        (CREATE INDEX's backfill): the LSM builds no tuple per pair (`KVReader.scan_columns`).
        The span read is recorded as `scan_batches` records it; once this transaction holds
        writes, the rest is read through `scan_batches` (our writes win)."""
        self._check_active()
        if end is not None and end <= start:
            return
        buffer = self._buffer
        if buffer.entries or buffer.ranges or self._snapshot.pages_itself:
            yield from map(columns_of, self.scan_batches(start, end, False, None, repeat(size)))
            return
        tracker = None if self.read_only else self._reads.open_scan(start, end, False)
        self.kv_scans += 1
        tally, prefix = self._tally, start[:PREFIX_LEN]
        for keys, values in self._snapshot.scan_columns(start, end, size):
            if buffer.entries or buffer.ranges:  # written since the last list
                yield from map(columns_of, self.scan_batches(keys[0], end, False, None, repeat(size)))
                return
            self.kv_keys_read += len(keys)
            tally[prefix] = tally.get(prefix, 0) + len(keys)
            if tracker is not None:
                tracker.last = keys[-1]
            yield keys, values
            if not self._active:  # the snapshot is closed once the transaction ends
                self._check_active()
        if tracker is not None:
            tracker.exhausted = True

    def _scan(
        self,
        start: bytes,
        end: bytes | None,
        reverse: bool,
        limit: int | None,
        hidden: Container[bytes] | None,
    ) -> Iterator[tuple[bytes, bytes]]:
        self._check_active()  # the body first runs at the first next(), maybe after the end
        if (limit is not None and limit <= 0) or (end is not None and end <= start):
            return
        if self.read_only:
            # Nothing to merge (the buffer stays empty) and nothing to record.
            tracker = None
            pairs = iter(self._snapshot.scan(start, end, reverse, limit))
        else:
            tracker = self._reads.open_scan(start, end, reverse)
            pairs = merged_scan(self._snapshot, self._buffer, start, end, reverse, limit, hidden)
        remaining = -1 if limit is None else limit  # -1: unlimited
        self.kv_scans += 1
        pulled = 0
        try:
            for pair in pairs:
                if tracker is not None:
                    tracker.last = pair[0]
                pulled += 1
                yield pair
                remaining -= 1
                if remaining == 0:
                    return
                if not self._active:  # the snapshot is closed once the transaction ends
                    self._check_active()
            if tracker is not None:
                tracker.exhausted = True
        finally:
            self.kv_keys_read += pulled
            prefix = start[:PREFIX_LEN]
            tally = self._tally
            tally[prefix] = tally.get(prefix, 0) + pulled

    # -- writes --------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes) -> None:
        if not self._active or self.read_only:
            self._check_writable()
        self.kv_puts += 1
        self._buffer.put(key, value)

    def delete(self, key: bytes) -> None:
        if not self._active or self.read_only:
            self._check_writable()
        self.kv_puts += 1
        self._buffer.put(key, None)

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Delete every key in ``[start, end)`` this transaction sees; later puts stay visible."""
        self._check_writable()
        self.kv_puts += 1
        self._buffer.delete_range(start, end)

    def put_if_absent(self, key: bytes, value: bytes) -> None:
        """Put ``key`` only if this transaction sees no value there.

        Raises `ConditionFailedError(key, actual)` when it does. The existence check is a
        recorded read, so a concurrent transaction inserting the same key makes one of the two
        fail at commit with SerializationFailure: unique indexes rely on this.
        """
        if not self._active or self.read_only:
            self._check_writable()
        self.kv_puts += 1
        buffer = self._buffer
        current = buffer.entries.get(key, ABSENT)
        if current is not ABSENT:  # the buffer decides: our own put or delete
            if current is not None:
                raise ConditionFailedError(key, current)
            buffer.put(key, value)
            return
        if not (buffer.ranges and buffer.covering_range(key) is not None):
            self._reads.add_point(key)
            self.kv_gets += 1
            prefix = key[:PREFIX_LEN]
            self._tally[prefix] = self._tally.get(prefix, 0) + 1
            actual = self._snapshot.get(key)
            if actual is not None:
                raise ConditionFailedError(key, actual)
        buffer.put_new(key, value)  # no entry for ``key``: skip put's lookup

    def put_new_batch(self, checked: list[tuple[bytes, bytes]], plain: list[tuple[bytes, bytes]]) -> bool:
        """`put_if_absent` of each pair in ``checked`` and `put` of each pair in ``plain``, all
        or nothing, with one snapshot read for the checked keys (a bulk INSERT's chunk of rows).

        Returns False, having written nothing, unless every key is new to this transaction (no
        entry in its buffer), distinct, absent from the snapshot (or inside a delete range of
        the transaction, as `put_if_absent` sees it) and within the size limit: the caller
        then goes pair by pair for the precise error."""
        if not self._active or self.read_only:
            self._check_writable()
        buffer = self._buffer
        keys = [key for key, _ in checked]
        if not buffer.entries.keys().isdisjoint(keys) or not buffer.entries.keys().isdisjoint(
                [key for key, _ in plain]):
            return False
        if buffer.ranges:  # keys our own delete_range hides need no read: nothing is there
            keys = [key for key in keys if buffer.covering_range(key) is None]
        self._reads.add_points(keys)
        self.kv_gets += len(keys)
        tally = self._tally
        for prefix, count in Counter([key[:PREFIX_LEN] for key in keys]).items():
            tally[prefix] = tally.get(prefix, 0) + count
        if any(value is not None for value in self._snapshot.get_many(keys)):
            return False
        if not buffer.put_new_batch(checked + plain):
            return False
        self.kv_puts += len(checked) + len(plain)
        return True

    # -- savepoints ----------------------------------------------------------------------

    def savepoint(self) -> int:
        """Open a savepoint and return its token. Savepoints nest."""
        if not self._active:
            self._check_active()
        return self._buffer.savepoint()

    def rollback_to(self, token: int) -> None:
        """Undo the writes made since savepoint ``token`` (it stays open).

        Reads stay recorded: what the transaction saw may already have shaped its other writes.
        """
        self._check_active()
        self._buffer.rollback_to(token)

    def release(self, token: int) -> None:
        """Close savepoint ``token`` and any opened after it, keeping their writes."""
        if not self._active:
            self._check_active()
        self._buffer.release(token)

    # -- end -----------------------------------------------------------------------------

    def on_commit(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` after a successful commit (not after rollback or a failed commit)."""
        self._check_active()
        self._callbacks.append(fn)

    def commit(self) -> int | None:
        """Validate and apply the writes; return the engine seq (None when nothing was written).

        Raises `SerializationFailure` when a concurrent commit wrote something this transaction
        read; the transaction is then discarded and the caller should run it again. If a
        callback registered with `on_commit` raises, the commit has already happened; the
        remaining callbacks still run and the first error is re-raised.
        """
        self._check_active()
        try:
            if self.read_only or self._buffer.write_count == 0:
                seq = None
                self._manager._note_trivial_commit()
            else:
                seq = self._manager._commit(self)
        finally:
            self._finish()
        self.commit_seq = seq
        self._run_callbacks()
        return seq

    def rollback(self) -> None:
        """Discard every buffered write. A no-op on a transaction that already ended."""
        if not self._active:
            return
        self._finish()
        self._callbacks.clear()
        self._manager._note_rollback()

    def _finish(self) -> None:
        self._active = False
        self._manager._release_txn(self.txn_id, self._snapshot)
        if self._buffer.write_count or self._buffer.byte_size:
            self._buffer = WriteBuffer(0)  # the memory goes now, not when the object does
        if len(self._reads):
            self._reads = ReadSet()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        first_error: BaseException | None = None
        for fn in callbacks:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - all callbacks must run; re-raised below
                if first_error is None:
                    first_error = exc
        if first_error is not None:
            raise first_error

    # -- the manager's view at commit ------------------------------------------------------

    def _read_spans(self) -> KeySpans:
        return self._reads.key_spans()

    def _write_spans(self) -> KeySpans:
        buffer = self._buffer
        ranges = Intervals(list(buffer.ranges.keys()), list(buffer.ranges.values()))
        return KeySpans(buffer.sorted_keys(), ranges)

    def _batch(self) -> WriteBatch:
        return self._buffer.to_batch()

    # -- context manager -----------------------------------------------------------------

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        """Commit when the block succeeds, roll back when it raises."""
        if exc_type is None:
            if self._active:
                self.commit()
        else:
            self.rollback()

    def __repr__(self) -> str:
        state = "active" if self._active else "ended"
        kind = "read-only" if self.read_only else "read-write"
        return (
            f"<Transaction {self.txn_id} {kind} {state} snapshot={self.snapshot_seq} "
            f"writes={self.write_count} reads={self.read_count}>"
        )


def _tally_keys(tally: dict[bytes, int], keys: list[bytes]) -> None:
    """Count ``keys`` into ``tally`` by prefix: at once when they all share the first's (one
    table's rows, one index's entries: the usual batch), else key by key. The figures read a
    prefix as the (table id, index id) it begins with (`figures.ident_of`), so keys whose two
    ids take a byte each (ids below 110) share the prefix of those two bytes: a batch of one
    table's rows is counted at once even where the rows' keys differ in their third byte."""
    if not keys:
        return
    first = keys[0]
    head = first[:PREFIX_LEN]
    if len(head) == PREFIX_LEN and _ONE_BYTE_ID[first[0]] and _ONE_BYTE_ID[first[1]]:
        head = first[:2]
    if len(head) >= 2 and all(map(bytes.startswith, keys, repeat(head))):
        tally[head] = tally.get(head, 0) + len(keys)
        return
    for key in keys:
        prefix = key[:PREFIX_LEN]
        tally[prefix] = tally.get(prefix, 0) + 1


_ONE_BYTE_ID = [M.INT_ZERO <= byte <= M.INT_SMALL_MAX for byte in range(256)]  # an id below 110


def _sliced(pairs: Iterator[tuple[bytes, bytes]], sizes: Iterator[int]) -> Iterator[list[tuple[bytes, bytes]]]:
    """``pairs`` in lists of ``next(sizes)`` pairs."""
    while batch := list(islice(pairs, next(sizes))):
        yield batch
