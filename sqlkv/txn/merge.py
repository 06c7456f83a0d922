"""Lazy merge of a snapshot scan with a transaction's write buffer (read-your-writes scans).

``SELECT * FROM t WHERE id >= 10 LIMIT 5`` inside a transaction that already updated row 12 and
deleted row 11 becomes ``txn.scan(k10, end, limit=5)``: this module walks the engine snapshot's
scan of ``[k10, end)`` and the buffer's entries side by side, key by key. A buffered entry wins
over the snapshot's pair for the same key (a tombstone hides it); a snapshot key inside a
buffered range delete is skipped -- and the snapshot scan jumps to the end of that range instead
of stepping through every deleted key.

The buffer is consulted live: a write the consumer makes while the scan is open is seen if it
lands on a key the scan has not reached yet. The lookahead into the buffer is cached and
recomputed only when the buffer's version changes, so a scan over a table the transaction has
not touched costs one comparison per row.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

from sqlkv.storage.kv import KVReader
from sqlkv.txn.buffer import WriteBuffer


class _SnapshotCursor:
    """The snapshot's scan of ``[lo, hi)``, restartable past a key or past a deleted range.

    With a page size the underlying scan is asked for that many pairs at a time (a hint that
    lets an engine stop early under ``LIMIT``); a full page means "maybe more", so the cursor
    reopens after the last key with a doubled page.
    """

    def __init__(
        self, reader: KVReader, lo: bytes, hi: bytes | None, reverse: bool, page: int | None
    ) -> None:
        self._reader = reader
        self._lo = lo
        self._hi = hi
        self._reverse = reverse
        self._page = page
        self.current: tuple[bytes, bytes] | None = None
        self._open()

    def _open(self) -> None:
        if self._hi is not None and self._hi <= self._lo:
            self._iter: Iterator[tuple[bytes, bytes]] = iter(())
        else:
            self._iter = iter(self._reader.scan(self._lo, self._hi, self._reverse, self._page))
        self._taken = 0
        self.advance()

    def advance(self) -> None:
        while True:
            item = next(self._iter, None)
            if item is not None:
                self._taken += 1
                self.current = item
                return
            last = self.current
            if self._page is None or self._taken < self._page or last is None:
                self.current = None
                return
            self._page *= 2
            self._narrow_past(last[0])
            self._open()
            if self.current is not None:
                return

    def _narrow_past(self, key: bytes) -> None:
        if self._reverse:
            self._hi = key
        else:
            self._lo = key + b"\x00"  # the smallest key after ``key``

    def skip_range(self, start: bytes, end: bytes) -> None:
        """Continue beyond the deleted range ``[start, end)`` the current key lies in."""
        if self._reverse:
            self._hi = start if self._hi is None else min(self._hi, start)
        else:
            self._lo = max(self._lo, end)
        self.current = None
        self._open()


def _buffer_keys(
    buffer: WriteBuffer, pos: bytes | None, start: bytes, end: bytes | None, reverse: bool
) -> Iterator[bytes]:
    """The buffered keys of ``[start, end)`` strictly past ``pos`` (None: from the edge), in order.

    Valid only until the buffer next changes; the caller re-creates it when the version moves.
    Asking for it brings the buffer's lazy key index up to date (see `WriteBuffer.sorted_index`).
    """
    if not buffer.entries:
        return iter(())
    index = buffer.sorted_index()
    if pos is None:
        return index.irange(start, end, inclusive=(True, False), reverse=reverse)
    if reverse:
        return index.irange(start, pos, inclusive=(True, False), reverse=True)
    return index.irange(pos, end, inclusive=(False, False))


def merged_scan(
    reader: KVReader,
    buffer: WriteBuffer,
    start: bytes,
    end: bytes | None,
    reverse: bool,
    limit_hint: int | None,
    hidden: Container[bytes] | None = None,
) -> Iterator[tuple[bytes, bytes]]:
    """Yield the pairs of ``[start, end)`` as the transaction sees them, lazily, in scan order.

    Buffered keys in ``hidden`` are left out (the snapshot's pair for them stays shadowed).
    """
    page = None
    if limit_hint is not None:
        page = limit_hint + buffer.count_entries(start, end) + 1
    cursor = _SnapshotCursor(reader, start, end, reverse, page)
    pos: bytes | None = None  # the last key the merge has passed, from either side
    seen_version = -1
    buffered_keys: Iterator[bytes] = iter(())
    next_buffered: bytes | None = None
    while True:
        if buffer.version != seen_version:
            buffered_keys = _buffer_keys(buffer, pos, start, end, reverse)
            next_buffered = next(buffered_keys, None)
            seen_version = buffer.version
        snap = cursor.current
        if snap is None and next_buffered is None:
            return
        if snap is None or (
            next_buffered is not None
            and (next_buffered >= snap[0] if reverse else next_buffered <= snap[0])
        ):
            key: bytes = next_buffered  # type: ignore[assignment]  # not None on this branch
            if snap is not None and snap[0] == key:
                cursor.advance()  # the buffered write shadows the snapshot's pair
            value = buffer.entries[key]
            pos = key
            next_buffered = next(buffered_keys, None)
            if value is not None and (hidden is None or key not in hidden):
                yield key, value
            continue
        key, value = snap
        pos = key
        if buffer.ranges:
            covering = buffer.covering_range(key)
            if covering is not None:
                cursor.skip_range(*covering)
                continue
        cursor.advance()
        yield key, value
