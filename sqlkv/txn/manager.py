"""The transaction manager: snapshots out, validated write batches in, one engine at a time.

Walk two concurrent ``UPDATE accounts SET balance = balance + 1 WHERE id = 1`` through it:

1. Both call ``begin()``. Each is registered as active with its snapshot sequence number, so the
   manager knows how far back its log of committed write sets must reach.
2. Both read account 1 from their snapshots and buffer a new balance.
3. The first ``commit()`` takes the commit lock, finds no commit after its snapshot, writes its
   buffer as one `WriteBatch` (getting engine seq ``s``) and -- because the second transaction
   is still active and older than ``s`` -- logs ``(s, {account 1})``.
4. The second ``commit()`` takes the lock, finds the log entry ``s`` newer than its snapshot
   whose write set intersects its reads, and fails with `SerializationFailure`; its writes are
   discarded. Retried, it reads the new balance and commits. No update is lost.

The log keeps only what some active read-write transaction could still conflict with: entries
older than the oldest active snapshot are pruned at each commit, and nothing is logged while a
transaction commits alone. The commit lock covers validation and applying the batch only; reads,
building the batch and building the read/write spans happen outside it, and so does waiting for
the batch to be durable (`Engine.wait_durable`), so concurrent commits share one fsync.

On a shared engine (etcd: other processes commit too) none of this applies: the commit hands
its read spans to the engine with the batch (``WriteBatch.validate_reads``) and the store checks
them atomically with the write (`_commit_shared`); nothing is logged or locked here.

Writes that reach the engine without this manager (a direct ``engine.write``) cannot be checked
key by key. At each commit the manager compares the engine's sequence number with the last one it
wrote; if the engine moved on without it, those writes are logged as having written every key, so
transactions concurrent with them restart rather than commit on a stale read. (A write around
the manager landing between a commit's check and its own engine write goes unnoticed by that one
commit; transactions must therefore go through the manager for full protection.)
"""

from __future__ import annotations

import itertools
import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlkv.encoding.pretty import pretty_key
from sqlkv.errors import OperationalError, SerializationFailure
from sqlkv.storage.kv import Engine, Snapshot, WriteBatch
from sqlkv.txn.buffer import DEFAULT_MAX_TXN_BYTES
from sqlkv.txn.bulk import DEFAULT_THRESHOLD as DEFAULT_INGEST_THRESHOLD
from sqlkv.txn.bulk import plan as plan_bulk
from sqlkv.txn.figures import TxnFigures, describe_active
from sqlkv.txn.spans import Intervals, KeySpans
from sqlkv.txn.transaction import Transaction

T = TypeVar("T")

# How many keys and ranges the conflict log may hold before it drops its oldest entries; a
# transaction older than a dropped entry then restarts instead of being checked against it.
DEFAULT_MAX_LOG_KEYS = 2_000_000

_managers: weakref.WeakKeyDictionary[Engine, TxnManager] = weakref.WeakKeyDictionary()
_managers_lock = threading.Lock()


@dataclass
class _LoggedCommit:
    """The write set of one commit that some active transaction may not have seen."""

    seq: int
    writes: KeySpans
    foreign: bool = False  # written around the manager: treated as writing every key


@dataclass
class _Fence:
    """A key span whose commits wait (`TxnManager.fence`), but for the listed transactions."""

    spans: KeySpans
    passes: set[int] = field(default_factory=set)


@dataclass
class _ActiveTxn:
    snapshot_seq: int
    read_only: bool
    started: float = 0.0  # Unix time of begin()
    txn: Any = None  # a weakref to the Transaction, once made (for sqlkv_internal.transactions)


class TxnManager:
    """Begins transactions on one engine and serialises their commits."""

    def __init__(
        self,
        engine: Engine,
        max_txn_bytes: int = DEFAULT_MAX_TXN_BYTES,
        max_log_keys: int = DEFAULT_MAX_LOG_KEYS,
    ) -> None:
        # A weak reference: managers live in a WeakKeyDictionary keyed by the engine, and a
        # strong one would keep every engine alive forever.
        self._engine_ref = weakref.ref(engine)
        self.max_txn_bytes = max_txn_bytes
        self.max_log_keys = max_log_keys
        self._commit_lock = threading.Lock()
        self._last_applied_seq = 0  # the last batch this manager applied (maybe not yet durable)
        self._registry_lock = threading.RLock()  # RLock: finalizers may run during a GC inside it
        self._active: dict[int, _ActiveTxn] = {}
        self._ids = itertools.count(1)
        self._log: deque[_LoggedCommit] = deque()
        self._log_keys = 0
        self._log_floor = 0  # commits numbered <= this were dropped from a still-needed log
        self._last_seen_seq = engine.last_seq
        self._fences: list[_Fence] = []  # spans whose commits wait (a bulk index backfill)
        self._fence_released = threading.Condition(self._commit_lock)
        self._commits = 0
        self._trivial_commits = 0
        self.bulk_commits = 0  # commits written by ingestion (bulk.py)
        # Buffered puts from which a commit into empty tables ingests (None: never; bulk.py).
        self.ingest_threshold: int | None = DEFAULT_INGEST_THRESHOLD
        self._aborts = 0
        self._rollbacks = 0
        self.figures = TxnFigures()

    @classmethod
    def for_engine(cls, engine: Engine) -> TxnManager:
        """The one manager of ``engine`` (created on first use)."""
        with _managers_lock:
            manager = _managers.get(engine)
            if manager is None:
                manager = cls(engine)
                _managers[engine] = manager
            return manager

    @property
    def engine(self) -> Engine:
        return self._engine()

    def _engine(self) -> Engine:
        engine = self._engine_ref()
        if engine is None:
            raise OperationalError("the storage engine of this transaction manager is gone")
        return engine

    # -- begin ---------------------------------------------------------------------------

    def begin(self, read_only: bool = False) -> Transaction:
        """Start a transaction on a fresh snapshot of the engine."""
        engine = self._engine()
        started = time.time()
        if read_only:
            # Never validated, so no commit needs to log its writes for it: registered once,
            # after its snapshot exists (one autocommit SELECT is one of these).
            return self._registered(Transaction(self, next(self._ids), engine.snapshot(), True,
                                                self.max_txn_bytes), started)
        with self._registry_lock:
            txn_id = next(self._ids)
            # Registered before the snapshot exists, with a seq no newer than it will be, so a
            # commit racing with this begin either logs its writes or is inside the snapshot.
            self._active[txn_id] = _ActiveTxn(engine.last_seq, read_only, started)
            applied = self._last_applied_seq
        try:
            # A commit applied before we registered may not have logged its writes for us
            # and may not be visible yet (its fsync is in flight): wait until it is, so our
            # snapshot contains it.
            engine.wait_durable(applied)
            snapshot = engine.snapshot()
        except BaseException:
            self._release_txn(txn_id, None)
            raise
        return self._registered(Transaction(self, txn_id, snapshot, read_only, self.max_txn_bytes), started)

    def _registered(self, txn: Transaction, started: float) -> Transaction:
        """``txn`` entered in the registry of active transactions. The entry's weak reference
        releases it if the transaction is dropped without commit or rollback: an abandoned
        transaction must not pin the conflict log or its snapshot. (Ending it removes the
        entry, and with it the reference, so the callback then never runs.)"""
        txn_id, snapshot = txn.txn_id, txn._snapshot

        def abandoned(_ref: Any) -> None:
            self._release_txn(txn_id, snapshot)

        with self._registry_lock:
            self._active[txn_id] = _ActiveTxn(snapshot.seq, txn.read_only, started,
                                              weakref.ref(txn, abandoned))
        return txn

    def begin_as_of(self, when: float) -> Transaction:
        """A read-only transaction on the state at wall-clock time ``when`` (Unix seconds;
        ``AS OF SYSTEM TIME``): the engine resolves the time, or refuses it (history.py)."""
        engine = self._engine()
        snapshot = engine.snapshot_as_of(when)
        started = time.time()
        with self._registry_lock:
            txn_id = next(self._ids)
        txn = Transaction(self, txn_id, snapshot, True, self.max_txn_bytes)
        txn.as_of = when
        return self._registered(txn, started)

    def run(
        self, fn: Callable[[Transaction], T], read_only: bool = False, max_attempts: int = 20
    ) -> T:
        """Run ``fn(txn)`` in a transaction and commit, retrying on SerializationFailure.

        ``fn`` must be safe to run again (no side effects outside the transaction).
        """
        attempt = 1
        while True:
            txn = self.begin(read_only)
            try:
                result = fn(txn)
                txn.commit()
                return result
            except SerializationFailure:
                txn.rollback()
                if attempt >= max_attempts:
                    raise
            except BaseException:
                txn.rollback()
                raise
            # Jittered backoff so the transactions that collided do not collide again.
            time.sleep(random.uniform(0, min(0.05, 0.0005 * 2**attempt)))
            attempt += 1

    # -- bookkeeping ---------------------------------------------------------------------

    def _release_txn(self, txn_id: int, snapshot: Snapshot | None) -> None:
        """Forget an ended (or garbage-collected) transaction and close its snapshot."""
        with self._registry_lock:
            entry = self._active.pop(txn_id, None)
        if snapshot is not None:
            snapshot.close()
        if entry is not None and entry.read_only:
            return  # the log's horizon is the oldest read-write snapshot: it did not move
        # Shrink the log now if no commit is running (a commit prunes it itself anyway).
        if self._commit_lock.acquire(blocking=False):
            try:
                self._prune()
            finally:
                self._commit_lock.release()

    def _note_trivial_commit(self) -> None:
        with self._registry_lock:  # ``+=`` is not atomic across threads
            self._trivial_commits += 1

    def _note_rollback(self) -> None:
        with self._registry_lock:
            self._rollbacks += 1

    def _others_active(self, txn_id: int) -> bool:
        with self._registry_lock:
            return any(tid != txn_id and not a.read_only for tid, a in self._active.items())

    def _horizon(self) -> int | None:
        """The oldest snapshot of an active read-write transaction (None: there is none)."""
        with self._registry_lock:
            seqs = [a.snapshot_seq for a in self._active.values() if not a.read_only]
        return min(seqs, default=None)

    # -- commit --------------------------------------------------------------------------

    def _commit(self, txn: Transaction) -> int:
        """Validate ``txn`` against later commits and apply its writes; return the engine seq."""
        started = time.perf_counter_ns()
        engine = self._engine()
        if engine.shared:
            return self._commit_shared(engine, txn, txn._batch())
        bulk = plan_bulk(engine, txn, self.ingest_threshold)  # an ingesting commit (bulk.py)?
        batch = None if bulk is not None else txn._batch()
        # Build the spans outside the lock when they will probably be needed.
        reads = txn._read_spans() if engine.last_seq > txn.snapshot_seq else None
        writes = None
        if self._others_active(txn.txn_id):
            writes = bulk.write_spans() if bulk is not None else txn._write_spans()
        with self._commit_lock:
            if self._fences and self._wait_for_fences(txn):
                writes = None  # others may have come and gone while this commit waited
            self._log_foreign_writes(engine.last_seq)
            if self._needs_validation(txn.snapshot_seq):
                if reads is None:
                    reads = txn._read_spans()
                self._validate(txn, reads)
            if bulk is not None and bulk.still_fresh(self._logged_since(txn.snapshot_seq)):
                seq = engine.ingest(bulk.pairs(txn._buffer.entries))  # durable when it returns
                self.bulk_commits += 1
            else:
                if batch is None:  # a commit after our snapshot wrote into a fresh span
                    batch = txn._batch()
                    bulk = None
                # Applied under the lock, made durable outside it: commits that queue behind
                # this one share its fsync (group commit) instead of each waiting for their own.
                seq = engine.write_nowait(batch)
            self._last_applied_seq = seq
            # Engines may number a batch with several seqs (one per op), so a gap below ``seq``
            # proves nothing; a write around us after this point is seen by the next commit.
            self._last_seen_seq = max(self._last_seen_seq, seq)
            self._release_txn(txn.txn_id, None)
            if self._others_active(txn.txn_id):
                if writes is None:
                    writes = bulk.write_spans() if bulk is not None else txn._write_spans()
                self._append(_LoggedCommit(seq, writes))
            self._prune()
            self._commits += 1
        engine.wait_durable(seq)
        self.figures.commit_latency.record(time.perf_counter_ns() - started)
        if bulk is not None:
            self.figures.add_write_keys(bulk.keys)
        else:
            self.figures.add_writes(batch.ops)  # type: ignore[union-attr]
        return seq

    def _logged_since(self, seq: int) -> list[_LoggedCommit]:
        """The logged commits newer than ``seq`` (commit lock held)."""
        return [entry for entry in self._log if entry.seq > seq]

    def _commit_shared(self, engine: Engine, txn: Transaction, batch: WriteBatch) -> int:
        """Hand the read spans to an engine other processes write too: it validates them
        atomically with the write (an in-memory log here would miss the other clients)."""
        reads = txn._read_spans()
        ranges = list(zip(reads.ranges.starts, reads.ranges.ends))
        batch.validate_reads(txn.snapshot_seq, reads.points, ranges)
        started = time.perf_counter_ns()
        try:
            seq = engine.write(batch)
        except SerializationFailure as exc:
            with self._registry_lock:
                self._aborts += 1
            # the store found the conflict; it may name the key (etcd does), the read span holding it
            # is then ours
            key = getattr(exc, "conflict_key", None)
            self.figures.note_failure(txn.txn_id, txn.snapshot_seq, getattr(exc, "conflict_seq", None),
                                      key, reads, _reason(exc))
            if key is None:
                raise
            # the store names the key as bytes; the user reads it in the key grammar
            named = SerializationFailure(
                f"restart transaction: read of key {_show_key(key)} conflicts with a write committed "
                f"by another client after this transaction's snapshot at revision {txn.snapshot_seq} "
                f"(SQLSTATE 40001)")
            named.conflict_key, named.conflict_seq = key, getattr(exc, "conflict_seq", None)
            raise named from None
        finally:
            self._release_txn(txn.txn_id, None)
        with self._registry_lock:
            self._commits += 1
        self.figures.commit_latency.record(time.perf_counter_ns() - started)
        self.figures.add_writes(batch.ops)
        return seq

    def _needs_validation(self, snapshot_seq: int) -> bool:
        return snapshot_seq < self._log_floor or (bool(self._log) and self._log[-1].seq > snapshot_seq)

    def _validate(self, txn: Transaction, reads: KeySpans) -> None:
        if txn.snapshot_seq < self._log_floor:
            self._aborts += 1
            self.figures.note_failure(txn.txn_id, txn.snapshot_seq, None, None, None,
                                      "snapshot older than the conflict history kept")
            raise SerializationFailure(
                f"restart transaction: snapshot seq {txn.snapshot_seq} is older than the conflict "
                f"history kept (max_log_keys={self.max_log_keys}) (SQLSTATE 40001)"
            )
        for entry in reversed(self._log):
            if entry.seq <= txn.snapshot_seq:
                break
            witness = entry.writes.first_overlap(reads)
            if witness is None:
                continue
            self._aborts += 1
            source = "a write outside the transaction manager" if entry.foreign else "a write"
            self.figures.note_failure(txn.txn_id, txn.snapshot_seq, entry.seq, witness, reads,
                                      f"read conflicts with {source}")
            raise SerializationFailure(
                f"restart transaction: read of key {_show_key(witness)} conflicts with {source} "
                f"committed at seq {entry.seq}, after this transaction's snapshot at seq "
                f"{txn.snapshot_seq} (SQLSTATE 40001)"
            )

    def _log_foreign_writes(self, current_seq: int) -> None:
        """Log engine writes numbered up to ``current_seq`` this manager did not make."""
        if current_seq <= self._last_seen_seq:
            return
        self._last_seen_seq = current_seq
        if self._horizon() is not None:
            self._append(_LoggedCommit(current_seq, KeySpans.everything(), foreign=True))

    def _append(self, entry: _LoggedCommit) -> None:
        self._log.append(entry)
        self._log_keys += len(entry.writes)
        while self._log_keys > self.max_log_keys and len(self._log) > 1:
            dropped = self._log.popleft()
            self._log_keys -= len(dropped.writes)
            self._log_floor = max(self._log_floor, dropped.seq)

    def _prune(self) -> None:
        """Drop log entries every active read-write transaction has in its snapshot."""
        horizon = self._horizon()
        log = self._log
        while log and (horizon is None or log[0].seq <= horizon):
            self._log_keys -= len(log.popleft().writes)

    # -- bulk ingestion (CREATE INDEX backfill, sqlkv/sql/ddl/index_ingest.py) -------------

    @contextmanager
    def fence(self, start: bytes, end: bytes) -> Iterator[_Fence]:
        """Make every commit writing into ``[start, end)`` wait until the block exits.

        A commit validated and applied before the fence went up is in every snapshot taken
        after this returns; one arriving later waits (before validating), then validates
        against what committed meanwhile. Transactions marked with `pass_fence` (the fence
        holder's own) are not held."""
        fence = _Fence(KeySpans([], Intervals.from_spans([(start, end)])))
        with self._commit_lock:
            self._fences.append(fence)
        try:
            yield fence
        finally:
            with self._commit_lock:
                self._fences.remove(fence)
                self._fence_released.notify_all()

    def pass_fence(self, txn: Transaction, fence: _Fence) -> None:
        fence.passes.add(txn.txn_id)

    def _wait_for_fences(self, txn: Transaction) -> bool:
        """Wait (commit lock held, released while waiting) while a fence covers a write of
        ``txn``; True when it waited."""
        writes = txn._write_spans()
        waited = False
        while any(txn.txn_id not in f.passes and f.spans.first_overlap(writes) is not None for f in self._fences):
            self._fence_released.wait()
            waited = True
        return waited

    def ingest(self, pairs: Iterable[tuple[bytes, bytes]], start: bytes, end: bytes,
               point_reads: bool = True) -> int:
        """`Engine.ingest` the sorted ``pairs`` (all inside ``[start, end)``) as a commit of
        this manager: transactions that read that span and began before it conflict with it,
        as with any commit, and nothing else does (a write around the manager would count as
        writing every key). The engine holds its write lock for the whole ingestion anyway,
        so holding the commit lock meanwhile costs other commits nothing more. ``point_reads``:
        as `Engine.ingest`'s."""
        engine = self._engine()
        with self._commit_lock:
            self._log_foreign_writes(engine.last_seq)
            seq = engine.ingest(pairs, point_reads)
            if seq <= self._last_seen_seq:
                return seq  # nothing was ingested
            self._last_applied_seq = seq
            self._last_seen_seq = seq
            if self._horizon() is not None:
                self._append(_LoggedCommit(seq, KeySpans([], Intervals.from_spans([(start, end)]))))
            self._prune()
        return seq

    # -- figures -------------------------------------------------------------------------

    def active_transactions(self) -> list[dict[str, Any]]:
        """One dict per open transaction: id, snapshot seq, read-only, start time, counts."""
        with self._registry_lock:
            items = list(self._active.items())
        out = []
        for txn_id, a in items:
            txn = a.txn() if a.txn is not None else None
            out.append({"txn_id": txn_id, "snapshot_seq": a.snapshot_seq, "read_only": a.read_only,
                        **describe_active(a.started, txn)})
        return out

    def stats(self) -> dict[str, Any]:
        """Counters for humans and the REPL's .stats."""
        with self._registry_lock:
            active = len(self._active)
            active_read_only = sum(1 for a in self._active.values() if a.read_only)
        return {
            "commits": self._commits,
            "trivial_commits": self._trivial_commits,
            "bulk_commits": self.bulk_commits,
            "aborts": self._aborts,
            "rollbacks": self._rollbacks,
            "active": active,
            "active_read_only": active_read_only,
            "conflict_log_entries": len(self._log),
            "conflict_log_keys": self._log_keys,
        }


def _show_key(key: bytes, limit: int = 80) -> str:
    """The key in the pretty key grammar (``/Table/104/1/7/0``), not as raw bytes."""
    text = pretty_key(key)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reason(exc: SerializationFailure) -> str:
    """The reason a shared store's conflict is logged under: short when it named the key."""
    if getattr(exc, "conflict_key", None) is not None:
        return "read conflicts with a write by another client"
    return str(exc)
