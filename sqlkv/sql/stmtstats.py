"""Per-statement figures behind ``sqlkv_internal.statement_stats``.

``session.execute("SELECT * FROM users WHERE id = 7")`` runs inside `track_statement`: it
reads the clock and the transaction's KV counters (gets, scans, keys read, puts) before the
statement, and again when the statement is over -- for a SELECT that is when its rows have
been consumed or the result closed, not when ``execute`` returns. The difference is added to
the entry of the statement's *normalized* text, ``SELECT * FROM users WHERE id = ?``: literals
become ``?`` (a list of them, ``?, ...``), whitespace collapses. The normalization is computed
once per distinct SQL text (the plan cache works per text too), so a repeated statement costs
two clock reads, a dict lookup and a handful of additions.

Figures live per transaction manager (one per open database) and restart with the process.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlglot.tokens import Tokenizer, TokenType

from sqlkv.errors import SerializationFailure
from sqlkv.storage.metrics import Histogram

MAX_STATEMENTS = 1000  # distinct normalized statements kept; the least recently run go first
_NORMALIZED_CACHE = 4096
_LITERALS = {TokenType.NUMBER, TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.BIT_STRING,
             TokenType.HEX_STRING, TokenType.BYTE_STRING}
_LIST_OF_MARKS = re.compile(r"-?\?(?:\s*,\s*-?\?)+")


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
    last_run: float = 0.0
    latency: Histogram = field(default_factory=Histogram)


class StatementStats:
    """Figures per normalized statement, most recently run last."""

    _registry: weakref.WeakKeyDictionary[Any, StatementStats] = weakref.WeakKeyDictionary()
    _registry_lock = threading.Lock()

    def __init__(self) -> None:
        self.since = time.time()
        self._lock = threading.Lock()
        self._by_text: OrderedDict[str, StatementFigures] = OrderedDict()
        self._normalized: OrderedDict[str, str] = OrderedDict()

    @classmethod
    def of(cls, owner: Any) -> StatementStats:
        """The figures kept for ``owner`` (a transaction manager: one per open database)."""
        with cls._registry_lock:
            stats = cls._registry.get(owner)
            if stats is None:
                stats = cls._registry[owner] = cls()
            return stats

    def entry(self, sql: str, kind: str) -> StatementFigures:
        with self._lock:
            text = self._normalized.get(sql)
            if text is None:
                text = self._normalized[sql] = normalize(sql)
                if len(self._normalized) > _NORMALIZED_CACHE:
                    self._normalized.popitem(last=False)
            figures = self._by_text.get(text)
            if figures is None:
                figures = self._by_text[text] = StatementFigures(text, kind)
                if len(self._by_text) > MAX_STATEMENTS:
                    self._by_text.popitem(last=False)
            else:
                self._by_text.move_to_end(text)
            return figures

    def all(self) -> list[StatementFigures]:
        with self._lock:
            return list(self._by_text.values())


def normalize(sql: str) -> str:
    """``sql`` with its literals replaced by ``?`` and whitespace collapsed."""
    try:
        tokens = Tokenizer().tokenize(sql)
    except Exception:  # noqa: BLE001 - text that does not tokenize ran (and failed) anyway
        return " ".join(sql.split())
    parts: list[str] = []
    pos = 0
    for tok in tokens:
        if tok.token_type in _LITERALS:
            parts.append(sql[pos:_literal_start(sql, tok)])
            parts.append("?")
            pos = tok.end + 1
    parts.append(sql[pos:])
    text = " ".join("".join(parts).split()).rstrip(";").rstrip()
    return _LIST_OF_MARKS.sub("?, ...", text)


def _literal_start(sql: str, tok: Any) -> int:
    """Where a literal begins in ``sql``, with a one-letter prefix (``x'ab'``, ``E'q'``)."""
    start = tok.start
    if tok.token_type != TokenType.NUMBER and start > 0 and sql[start - 1].isalpha() \
            and (start == 1 or not (sql[start - 2].isalnum() or sql[start - 2] == "_")):
        start -= 1
    return start


def _counts(txn: Any) -> tuple[int, int, int, int]:
    if txn is None:
        return (0, 0, 0, 0)
    return (txn.kv_gets, txn.kv_scans, txn.kv_keys_read, txn.kv_puts)


def track_statement(session: Any, stmt: Any, run: Callable[[], Any]) -> Any:
    """Run ``run()`` (one statement of ``session``) and add its figures to its entry."""
    stats = StatementStats.of(session.db.txn_manager)
    figures = stats.entry(stmt.sql, stmt.kind)
    before_txn = session._txn if session._txn is not None and session._txn.active else None
    before = _counts(before_txn)
    session.last_txn = before_txn  # the session moves it to a transaction the statement opens
    started = time.perf_counter_ns()
    try:
        result = run()
    except BaseException as exc:
        _record(figures, session, before_txn, before, started, 0, exc)
        raise
    rows = getattr(result, "_rows", None)
    if rows is None:
        count = result.rowcount if result.rowcount > 0 else 0
        _record(figures, session, before_txn, before, started, count, None)
        return result
    seen = [0]
    result._rows = _counting(rows, seen)
    cleanup = result._cleanup

    def finish() -> None:
        if cleanup is not None:
            cleanup()
        _record(figures, session, before_txn, before, started, seen[0], None)

    result._cleanup = finish
    return result


def _counting(rows: Iterator[tuple], seen: list[int]) -> Iterator[tuple]:
    for row in rows:
        seen[0] += 1
        yield row


def _record(figures: StatementFigures, session: Any, before_txn: Any, before: tuple,
            started: int, rows: int, error: BaseException | None) -> None:
    elapsed = time.perf_counter_ns() - started
    txn = getattr(session, "last_txn", None)
    after = _counts(txn)
    if txn is not before_txn:
        before = (0, 0, 0, 0)  # the statement ran in a transaction of its own
    figures.count += 1
    figures.last_run = time.time()
    figures.latency.record(elapsed)
    figures.rows += rows
    figures.kv_gets += after[0] - before[0]
    figures.kv_scans += after[1] - before[1]
    figures.kv_keys_read += after[2] - before[2]
    figures.kv_puts += after[3] - before[3]
    if error is not None and not isinstance(error, (GeneratorExit, KeyboardInterrupt)):
        figures.errors += 1
        if isinstance(error, SerializationFailure):
            figures.retries += 1
