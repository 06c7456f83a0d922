"""Per-statement figures behind ``sqlkv_internal.statement_stats``.

``session.execute("SELECT * FROM users WHERE id = 7")`` is tracked by a `StatementTracker`: it
reads the clock and the transaction's KV counters (gets, scans, keys read, puts) before the
statement, and again when the statement is over -- for a SELECT that is when its rows have
been consumed or the result closed, not when ``execute`` returns. The difference is added to
the entry of the statement's *normalized* text, ``SELECT * FROM users WHERE id = ?``: literals
become ``?`` (a list of them, ``?, ...``), whitespace collapses (normalize.py; the parser makes
it from its own tokens). It is looked up once per distinct SQL text (the plan cache works per
text too), so a repeated statement costs two clock reads, a dict lookup and a handful of
additions (`record`); its duration is appended to a list the latency histogram takes in bulk
(`StatementFigures.settle`) when the figures are read or every `SETTLE_EVERY` executions.

Figures live per transaction manager (one per open database) and restart with the process.
"""

from __future__ import annotations

import threading
import time
import weakref
from time import perf_counter_ns
from dataclasses import dataclass, field
from typing import Any

from sqlkv.errors import SerializationFailure
from sqlkv.sql.normalize import normalize
from sqlkv.storage.metrics import Histogram

MAX_STATEMENTS = 1000  # distinct normalized statements kept; the least recently run go first
_NORMALIZED_CACHE = 4096
SETTLE_EVERY = 1024  # durations an entry keeps before bucketing them (`StatementFigures.settle`)
_SETTLING = threading.Lock()


@dataclass
class StatementFigures:
    statement: str
    kind: str
    count: int = 0
    errors: int = 0
    retries: int = 0  # executions that failed with a serialization failure (40001): retry them
    rows: int = 0
    kv_gets: int = 0
    kv_scans: int = 0
    kv_keys_read: int = 0
    kv_puts: int = 0
    last_run: int = 0  # perf_counter_ns of the last end (StatementStats.clock_offset: Unix time)
    latency: Histogram = field(default_factory=Histogram)
    # durations (ns) not in `latency` yet: an execution appends one, and the histogram takes
    # them in bulk (`settle`) when the figures are read or the list reaches SETTLE_EVERY
    pending: list[int] = field(default_factory=list)

    def settle(self) -> None:
        """Bucket the pending durations into `latency` (under a lock: two threads settling
        one entry at once must not both take its list)."""
        with _SETTLING:
            pending, self.pending = self.pending, []
            self.latency.record_many(pending)


class StatementStats:
    """Figures per normalized statement (at most MAX_STATEMENTS; the least recently run go)."""

    _registry: weakref.WeakKeyDictionary[Any, StatementStats] = weakref.WeakKeyDictionary()
    _registry_lock = threading.Lock()

    def __init__(self) -> None:
        self.since = time.time()
        # last_run is kept on the perf_counter clock (cheaper to read); this turns it into Unix time
        self.clock_offset = self.since - time.perf_counter_ns() / 1e9
        self._lock = threading.Lock()
        self._by_text: dict[str, StatementFigures] = {}
        self._by_sql: dict[str, StatementFigures] = {}  # the lock-free fast path: SQL text -> entry

    @classmethod
    def of(cls, owner: Any) -> StatementStats:
        """The figures kept for ``owner`` (a transaction manager: one per open database)."""
        with cls._registry_lock:
            stats = cls._registry.get(owner)
            if stats is None:
                stats = cls._registry[owner] = cls()
            return stats

    def entry(self, sql: str, kind: str, normalized: str | None = None) -> StatementFigures:
        """The entry of ``sql`` (``normalized``: its normalized text, when the parser made it)."""
        figures = self._by_sql.get(sql)
        if figures is not None:
            return figures
        text = normalize(sql) if normalized is None else normalized
        with self._lock:
            figures = self._by_text.get(text)
            if figures is None:
                if len(self._by_text) >= MAX_STATEMENTS:
                    self._evict()
                figures = self._by_text[text] = StatementFigures(text, kind)
            if len(self._by_sql) >= _NORMALIZED_CACHE:
                self._by_sql.clear()  # texts map to entries again on their next run
            self._by_sql[sql] = figures
            return figures

    def _evict(self) -> None:
        """Drop the least recently run tenth of the entries (caller holds the lock)."""
        ordered = sorted(self._by_text.values(), key=lambda f: f.last_run)
        for figures in ordered[: max(1, len(ordered) // 10)]:
            del self._by_text[figures.statement]
        self._by_sql = {sql: f for sql, f in self._by_sql.items() if f.statement in self._by_text}

    def all(self) -> list[StatementFigures]:
        """Every entry, its latency histogram up to date."""
        with self._lock:
            entries = list(self._by_text.values())
        for figures in entries:
            figures.settle()
        return entries


class StatementTracker:
    """The figures of one running statement of a session: `start` before it runs, then
    `finished` with its result or `failed` with its error (the session calls them around the
    statement, so the statement's own calls do not pass through this module)."""

    __slots__ = ("figures", "state", "before", "base", "started")

    def __init__(self, session: Any, stmt: Any) -> None:
        self.figures = figures_for(session, stmt)
        self.state = state = session.state
        before = state.txn
        if before is not None and not before.active:
            before = None
        self.before = before
        state.last_txn = before  # the session moves it to a transaction the statement opens
        self.base = None if before is None else (before.kv_gets, before.kv_scans, before.kv_keys_read,
                                                 before.kv_puts)
        self.started = perf_counter_ns()

    def failed(self, exc: BaseException) -> None:
        _record(self.figures, self.state.last_txn, self.before, self.base, self.started, 0, exc)

    def finished(self, result: Any) -> Any:
        """``result``, its figures recorded now -- or, for streaming rows, when they are consumed
        or the result is closed."""
        if not result.streaming:
            _record(self.figures, self.state.last_txn, self.before, self.base, self.started,
                    result.rowcount if result.rowcount > 0 else result.produced, None)
            return result
        cleanup = result._cleanup
        txn = self.state.last_txn

        def finish() -> None:  # when the rows are consumed or the result closed
            if cleanup is not None:
                cleanup()
            _record(self.figures, txn, self.before, self.base, self.started, result.produced, None)

        result._cleanup = finish
        return result


def figures_for(session: Any, stmt: Any) -> StatementFigures:
    """The entry ``stmt`` counts into (its normalized text's) in the session's database."""
    stats = session.__dict__.get("_statement_stats")
    if stats is None:
        stats = session._statement_stats = StatementStats.of(session.db.txn_manager)
    return stats._by_sql.get(stmt.sql) or stats.entry(stmt.sql, stmt.kind, stmt.normalized)


def kv_counts(txn: Any) -> tuple[int, int, int, int]:
    """A transaction's KV request counts now (`record` adds what a statement added to them)."""
    return txn.kv_gets, txn.kv_scans, txn.kv_keys_read, txn.kv_puts


def record(figures: StatementFigures, txn: Any, base: tuple, started: int, rows: int,
           error: BaseException | None = None) -> None:
    """Add one execution that ran in ``txn`` from ``started`` (perf_counter_ns), its KV
    requests those beyond ``base`` (`kv_counts` when it began): what every execution pays
    (the statement fast path calls it directly, `StatementTracker` through `_record`)."""
    ended = perf_counter_ns()
    figures.count += 1
    figures.last_run = ended
    pending = figures.pending
    pending.append(ended - started)
    if len(pending) >= SETTLE_EVERY:
        figures.settle()
    figures.rows += rows
    figures.kv_gets += txn.kv_gets - base[0]
    figures.kv_scans += txn.kv_scans - base[1]
    figures.kv_keys_read += txn.kv_keys_read - base[2]
    figures.kv_puts += txn.kv_puts - base[3]
    if error is not None and not isinstance(error, (GeneratorExit, KeyboardInterrupt)):
        figures.errors += 1
        if isinstance(error, SerializationFailure):
            figures.retries += 1


class _NoRequests:
    """The KV counts of a statement that ran in no transaction."""

    kv_gets = kv_scans = kv_keys_read = kv_puts = 0


_NONE = (0, 0, 0, 0)
_NO_TXN = _NoRequests()


def _record(figures: StatementFigures, txn: Any, before_txn: Any, base: tuple | None, started: int,
            rows: int, error: BaseException | None) -> None:
    """Add one execution. Its KV requests are ``txn``'s: all of them when the statement opened
    ``txn``, else those beyond ``base`` (the counts when it began)."""
    if txn is None:
        txn, base = _NO_TXN, _NONE
    elif txn is not before_txn or base is None:
        base = _NONE
    record(figures, txn, base, started, rows, error)
