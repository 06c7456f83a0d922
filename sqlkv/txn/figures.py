"""What the transaction layer counts about itself: commit latency, KV traffic per index, failures.

A transaction counts its own gets, scans, keys read and writes in plain integers (the SQL
layer subtracts them around a statement for ``sqlkv_internal.statement_stats``), and adds the
keys it reads to the manager's `TxnFigures` per raw key prefix (the first `PREFIX_LEN` bytes:
one dict update per get, per scan); a commit adds the keys it wrote the same way. Prefixes are
decoded into (table id, index id) only when the figures are read. Besides the totals since
the manager started, the counts over the current and the previous *window*
(`WINDOW_SECONDS`) are what ``sqlkv_internal.hot_ranges`` ranks. Serialization failures are
logged with the key both sides touched and the read span that held it.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from sqlkv.encoding.keys import decode_uvarint
from sqlkv.errors import CorruptionError
from sqlkv.storage.metrics import EventLog, Histogram
from sqlkv.txn.spans import KeySpans

# Raw key bytes a read is tallied under: a table id and an index id take one byte each below
# id 110, two up to about 400, so four bytes hold both for any schema of sane size.
PREFIX_LEN = 4
WINDOW_SECONDS = 60.0
_prefix_of = itemgetter(slice(0, PREFIX_LEN))
_op_key = itemgetter(1)

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
    """Counters of one transaction manager, from ``since`` on (they restart with the process).

    ``reads`` and ``writes`` map raw key prefixes to keys read / written. Transactions add to
    ``reads`` directly (a dict update per get, no lock: two threads updating one prefix at the
    same instant may lose an increment, never corrupt anything). Windows are marks: copies of
    both dicts taken at most every `WINDOW_SECONDS` (checked at commits and when read); the hot
    figures are the counts now minus those at the older of the last two marks.
    """

    def __init__(self) -> None:
        self.since = time.time()
        self.commit_latency = Histogram()
        self.failures = EventLog(64)
        self.reads: dict[bytes, int] = {}
        self.writes: dict[bytes, int] = {}
        self._lock = threading.Lock()
        self._marks: deque[tuple[float, dict[bytes, int], dict[bytes, int]]] = deque(
            [(time.monotonic(), {}, {})], maxlen=2)

    def add_writes(self, ops: list) -> None:
        """Count the keys a commit wrote (a batch's ops), and start a new window when due."""
        self.add_write_keys(map(_op_key, ops))

    def add_write_keys(self, keys: Iterable[bytes]) -> None:
        """Count the keys a commit wrote, and start a new window when due."""
        # Counter counts in C: a 300k-key commit would spend ~0.2 s in a Python loop here
        writes = self.writes
        for prefix, count in Counter(map(_prefix_of, keys)).items():
            writes[prefix] = writes.get(prefix, 0) + count
        if time.monotonic() - self._marks[-1][0] >= WINDOW_SECONDS:
            self._maybe_mark()

    def _maybe_mark(self) -> None:
        now = time.monotonic()
        if now - self._marks[-1][0] >= WINDOW_SECONDS:
            with self._lock:
                if now - self._marks[-1][0] >= WINDOW_SECONDS:
                    self._marks.append((now, dict(self.reads), dict(self.writes)))

    def totals(self) -> dict[Ident, list[int]]:
        """Keys read and written per (table id, index id) since the manager started."""
        return _by_ident(dict(self.reads), dict(self.writes))

    def hot(self) -> tuple[dict[Ident, list[int]], float]:
        """Reads/writes per ident over the current and the previous window, and since when."""
        self._maybe_mark()
        started, reads0, writes0 = self._marks[0]
        reads, writes = dict(self.reads), dict(self.writes)
        for prefix, n in reads0.items():
            reads[prefix] -= n
        for prefix, n in writes0.items():
            writes[prefix] -= n
        return _by_ident(reads, writes), time.time() - (time.monotonic() - started)

    def note_failure(self, txn_id: int, snapshot_seq: int, conflict_seq: int | None,
                     key: bytes | None, reads: KeySpans | None, reason: str) -> None:
        span = _containing_span(reads, key) if reads is not None and key is not None else None
        self.failures.add({"time": time.time(), "txn_id": txn_id, "snapshot_seq": snapshot_seq,
                           "conflict_seq": conflict_seq, "key": key, "span": span, "reason": reason})


def _by_ident(reads: dict[bytes, int], writes: dict[bytes, int]) -> dict[Ident, list[int]]:
    out: dict[Ident, list[int]] = {}
    for slot, counts in ((0, reads), (1, writes)):
        for prefix, n in counts.items():
            ident = ident_of(prefix)
            if ident is not None and n:
                out.setdefault(ident, [0, 0])[slot] += n
    return {ident: pair for ident, pair in out.items() if pair[0] or pair[1]}


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
