"""What the transaction layer counts about itself: commit latency, KV traffic per index, failures.

A transaction counts its own gets, scans, keys read and writes in plain integers (the SQL
layer subtracts them around a statement for ``sqlkv_internal.statement_stats``) and tallies
the keys it reads per raw key prefix in a small dict. When it ends, the tally is folded into
the manager's `TxnFigures` per (table id, index id) -- decoded once per distinct prefix, not
once per key -- together with the keys its commit wrote. `TxnFigures` keeps those totals
since the manager started, plus the same counts for the current and the previous *window*
(`WINDOW_SECONDS`), which is what ``sqlkv_internal.hot_ranges`` ranks. Serialization failures
are logged with the key both sides touched and the read span that held it.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_right
from typing import Any

from sqlkv.encoding.keys import decode_uvarint
from sqlkv.errors import CorruptionError
from sqlkv.storage.metrics import EventLog, Histogram
from sqlkv.txn.spans import KeySpans

# Raw key bytes a read is tallied under: a table id and an index id take one byte each below
# id 110, two up to about 400, so four bytes hold both for any schema of sane size.
PREFIX_LEN = 4
WINDOW_SECONDS = 60.0

Ident = tuple[int, int | None]  # (table id, index id); index None when the key is too short


def ident_of(prefix: bytes) -> Ident | None:
    """(table id, index id) a key prefix belongs to; None for keys outside the table space."""
    try:
        table_id, off = decode_uvarint(prefix, 0)
    except (CorruptionError, IndexError, ValueError):
        return None
    try:
        index_id, _ = decode_uvarint(prefix, off)
    except (CorruptionError, IndexError, ValueError):
        return (table_id, None)
    return (table_id, index_id)


class TxnFigures:
    """Counters of one transaction manager, from ``since`` on (they restart with the process)."""

    def __init__(self) -> None:
        self.since = time.time()
        self.commit_latency = Histogram()
        self.failures = EventLog(64)
        self._lock = threading.Lock()
        self.totals: dict[Ident, list[int]] = {}  # ident -> [reads, writes]
        self.window_start = time.monotonic()
        self.window: dict[Ident, list[int]] = {}
        self.previous: dict[Ident, list[int]] = {}
        self.previous_start: float | None = None

    def add(self, reads: dict[bytes, int], written: list[bytes]) -> None:
        """Fold one ended transaction's reads (prefix -> keys) and written keys in."""
        if not reads and not written:
            return
        by_ident: dict[Ident, list[int]] = {}
        for prefix, count in reads.items():
            ident = ident_of(prefix)
            if ident is not None:
                by_ident.setdefault(ident, [0, 0])[0] += count
        last_prefix, last_ident = None, None
        for key in written:
            prefix = key[:PREFIX_LEN]
            if prefix != last_prefix:
                last_prefix, last_ident = prefix, ident_of(prefix)
            if last_ident is not None:
                by_ident.setdefault(last_ident, [0, 0])[1] += 1
        with self._lock:
            now = time.monotonic()
            if now - self.window_start >= WINDOW_SECONDS:
                self.previous = self.window if now - self.window_start < 2 * WINDOW_SECONDS else {}
                self.previous_start = self.window_start
                self.window, self.window_start = {}, now
            for ident, (r, w) in by_ident.items():
                for table in (self.totals, self.window):
                    slot = table.get(ident)
                    if slot is None:
                        table[ident] = [r, w]
                    else:
                        slot[0] += r
                        slot[1] += w

    def hot(self) -> tuple[dict[Ident, list[int]], float]:
        """Reads/writes per ident over the current and previous window, and since when."""
        with self._lock:
            merged = {k: list(v) for k, v in self.previous.items()}
            for k, (r, w) in self.window.items():
                slot = merged.setdefault(k, [0, 0])
                slot[0] += r
                slot[1] += w
            start = self.previous_start if self.previous else self.window_start
        return merged, time.time() - (time.monotonic() - start)

    def note_failure(self, txn_id: int, snapshot_seq: int, conflict_seq: int | None,
                     key: bytes | None, reads: KeySpans | None, reason: str) -> None:
        span = _containing_span(reads, key) if reads is not None and key is not None else None
        self.failures.add({"time": time.time(), "txn_id": txn_id, "snapshot_seq": snapshot_seq,
                           "conflict_seq": conflict_seq, "key": key, "span": span, "reason": reason})

    def snapshot_totals(self) -> dict[Ident, list[int]]:
        with self._lock:
            return {k: list(v) for k, v in self.totals.items()}


def _containing_span(reads: KeySpans, key: bytes) -> tuple[bytes, bytes | None]:
    """The read span (a point read, or a scanned range) holding ``key``."""
    ranges = reads.ranges
    i = bisect_right(ranges.starts, key)
    if i and (ranges.ends[i - 1] is None or key < ranges.ends[i - 1]):  # type: ignore[operator]
        return ranges.starts[i - 1], ranges.ends[i - 1]
    return key, key + b"\x00"


def describe_active(started: float, txn: Any) -> dict[str, Any]:
    """The figures of one open transaction (``txn`` may be gone: collected)."""
    return {"started": started,
            "reads": txn.read_count if txn is not None and txn.active else None,
            "writes": txn.write_count if txn is not None and txn.active else None,
            "kv_gets": txn.kv_gets if txn is not None else None,
            "kv_scans": txn.kv_scans if txn is not None else None}
