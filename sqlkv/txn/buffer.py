"""The write buffer: a transaction's uncommitted puts, deletes and range deletes, with savepoints.

``UPDATE t SET v = 2 WHERE id = 7`` inside a transaction ends here as ``put(key, value)``: the
buffer records ``key -> value`` in a SortedDict, so later reads in the same transaction see it
(read-your-writes) and the commit can hand every write to the engine as one `WriteBatch`.

State:

- ``entries``: key -> value, or key -> None for a buffered point delete (a tombstone that hides
  the snapshot's value).
- ``ranges``: disjoint, merged ``[start, end)`` intervals from ``delete_range``; they hide every
  snapshot key inside them. A ``delete_range`` also drops the entries it covers, so an entry is
  always newer than any range around it: a put after a range delete stays visible.

Savepoints: while at least one savepoint is open, every mutation appends an undo record that
restores the previous state; ``rollback_to`` pops records back to the savepoint's mark. With no
savepoint open nothing is logged, so ``savepoint(); put(); release()`` -- the SQL layer's
statement atomicity -- costs O(1) beyond the put itself and a million such statements stay linear.
"""

from __future__ import annotations

from sortedcontainers import SortedDict

from sqlkv.errors import OperationalError, ProgrammingError
from sqlkv.storage.kv import OP_DELETE, OP_DELETE_RANGE, OP_PUT, WriteBatch

# Rough Python overhead of one buffered entry (SortedDict slot, tuple, bytes headers), counted
# in ``byte_size`` so the size limit tracks memory rather than only payload bytes.
ENTRY_OVERHEAD = 64

DEFAULT_MAX_TXN_BYTES = 256 * 1024 * 1024

_ABSENT = object()  # "this key had no entry" in an undo record

_UNDO_ENTRY = 0  # (tag, key, previous value | None | _ABSENT)
_UNDO_RANGE = 1  # (tag, start of the range added, [ranges it absorbed])


class WriteBuffer:
    """Buffered writes of one transaction. Not thread-safe: a transaction belongs to one thread."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_TXN_BYTES) -> None:
        self.entries: SortedDict = SortedDict()
        self.ranges: SortedDict = SortedDict()  # start -> end, disjoint and merged
        self.max_bytes = max_bytes
        self.byte_size = 0
        # Bumped on every mutation, so a lazy scan knows when its cached lookahead is stale.
        self.version = 0
        self._undo: list[tuple] = []
        self._marks: list[tuple[int, int]] = []  # (savepoint token, undo log length)
        self._next_token = 1
        self.rollbacks = 0  # bumped by every rollback_to: undo-log readers must re-index

    # -- reads ---------------------------------------------------------------------------

    def lookup(self, key: bytes) -> tuple[bool, bytes | None]:
        """``(True, value_or_None)`` when the buffer decides ``key``; ``(False, None)`` otherwise."""
        value = self.entries.get(key, _ABSENT)
        if value is not _ABSENT:
            return True, value  # type: ignore[return-value]
        if self.ranges and self.covering_range(key) is not None:
            return True, None
        return False, None

    def covering_range(self, key: bytes) -> tuple[bytes, bytes] | None:
        """The buffered range delete containing ``key``, if any."""
        ranges = self.ranges
        i = ranges.bisect_right(key)
        if i == 0:
            return None
        start, end = ranges.peekitem(i - 1)
        return (start, end) if key < end else None

    def count_entries(self, start: bytes, end: bytes | None) -> int:
        """How many entries (puts and tombstones) lie in ``[start, end)``."""
        entries = self.entries
        hi = len(entries) if end is None else entries.bisect_left(end)
        return max(0, hi - entries.bisect_left(start))

    @property
    def write_count(self) -> int:
        """Distinct keys and ranges the commit batch will carry."""
        return len(self.entries) + len(self.ranges)

    def to_batch(self) -> WriteBatch:
        """The commit's batch: range deletes first, then entries in key order.

        Ranges go first because a batch applies in order and entries are newer than ranges.
        Tombstones inside a buffered range are redundant and left out.
        """
        batch = WriteBatch()
        ops = batch.ops
        for start, end in self.ranges.items():
            ops.append((OP_DELETE_RANGE, start, end))
        if not self.ranges:
            ops.extend(
                [(OP_PUT, k, v) if v is not None else (OP_DELETE, k, None) for k, v in self.entries.items()]
            )
        else:
            for key, value in self.entries.items():
                if value is not None:
                    ops.append((OP_PUT, key, value))
                elif self.covering_range(key) is None:
                    ops.append((OP_DELETE, key, None))
        batch.byte_size = max(0, self.byte_size - ENTRY_OVERHEAD * self.write_count)
        return batch

    # -- writes --------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None) -> None:
        """Buffer ``key -> value`` (``value=None``: a point delete)."""
        previous = self.entries.get(key, _ABSENT)
        new_size = self.byte_size + _entry_size(key, value)
        if previous is not _ABSENT:
            new_size -= _entry_size(key, previous)  # type: ignore[arg-type]
        if new_size > self.max_bytes:
            raise OperationalError(
                f"transaction too large: {new_size} bytes buffered in {self.write_count + 1} "
                f"writes exceeds the limit of {self.max_bytes} bytes (max_txn_bytes); split the "
                f"work into smaller transactions"
            )
        if self._marks:
            self._undo.append((_UNDO_ENTRY, key, previous))
        self._set_entry(key, value, previous)

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Hide every key in ``[start, end)``: drop covered entries, add a merged range."""
        if end <= start:
            return
        logging = bool(self._marks)
        for key in list(self.entries.irange(start, end, inclusive=(True, False))):
            previous = self.entries[key]
            if logging:
                self._undo.append((_UNDO_ENTRY, key, previous))
            self._set_entry(key, _ABSENT, previous)
        absorbed = self._absorbed_ranges(start, end)
        new_start = min([start] + [s for s, _ in absorbed])
        new_end = max([end] + [e for _, e in absorbed])
        for s, e in absorbed:
            self._remove_range(s, e)
        self._add_range(new_start, new_end)
        if logging:
            self._undo.append((_UNDO_RANGE, new_start, absorbed))

    def _absorbed_ranges(self, start: bytes, end: bytes) -> list[tuple[bytes, bytes]]:
        """Existing ranges that overlap or touch ``[start, end)`` and so merge with it."""
        ranges = self.ranges
        absorbed = []
        i = ranges.bisect_left(start)
        if i > 0:
            s, e = ranges.peekitem(i - 1)
            if e >= start:
                absorbed.append((s, e))
        for s in ranges.irange(start, end, inclusive=(True, True)):
            absorbed.append((s, ranges[s]))
        return absorbed

    def _set_entry(self, key: bytes, value: object, previous: object) -> None:
        """Set (or with ``value=_ABSENT`` remove) an entry, keeping byte_size exact."""
        if previous is not _ABSENT:
            self.byte_size -= _entry_size(key, previous)  # type: ignore[arg-type]
        if value is _ABSENT:
            if previous is not _ABSENT:
                del self.entries[key]
        else:
            self.entries[key] = value
            self.byte_size += _entry_size(key, value)  # type: ignore[arg-type]
        self.version += 1

    def _add_range(self, start: bytes, end: bytes) -> None:
        self.ranges[start] = end
        self.byte_size += len(start) + len(end) + ENTRY_OVERHEAD
        self.version += 1

    def _remove_range(self, start: bytes, end: bytes) -> None:
        del self.ranges[start]
        self.byte_size -= len(start) + len(end) + ENTRY_OVERHEAD
        self.version += 1

    # -- savepoints ----------------------------------------------------------------------

    def savepoint(self) -> int:
        token = self._next_token
        self._next_token += 1
        self._marks.append((token, len(self._undo)))
        return token

    def rollback_to(self, token: int) -> None:
        """Undo every write since savepoint ``token``; the savepoint stays open."""
        index = self._mark_index(token)
        mark = self._marks[index][1]
        while len(self._undo) > mark:
            self._apply_undo(self._undo.pop())
        self.rollbacks += 1
        del self._marks[index + 1 :]

    def release(self, token: int) -> None:
        """Forget savepoint ``token`` and the ones opened after it; keep their writes."""
        index = self._mark_index(token)
        del self._marks[index:]
        if not self._marks:
            self._undo.clear()

    def _mark_index(self, token: int) -> int:
        # Statement savepoints are always the innermost, so search from the top.
        for index in range(len(self._marks) - 1, -1, -1):
            if self._marks[index][0] == token:
                return index
        raise ProgrammingError(f"savepoint {token} does not exist (already released or rolled back)")

    def written_since(self, token: int) -> WrittenSince:
        """The keys written since savepoint ``token``, kept up to date as writes continue."""
        self._mark_index(token)
        return WrittenSince(self, token)

    def _apply_undo(self, record: tuple) -> None:
        if record[0] == _UNDO_ENTRY:
            _, key, previous = record
            self._set_entry(key, previous, self.entries.get(key, _ABSENT))
            return
        _, added_start, absorbed = record
        self._remove_range(added_start, self.ranges[added_start])
        for s, e in absorbed:
            self._add_range(s, e)


def _entry_size(key: bytes, value: bytes | None) -> int:
    return len(key) + (0 if value is None else len(value)) + ENTRY_OVERHEAD


class WrittenSince:
    """The set of keys put or deleted since a savepoint, read off the undo log incrementally.

    A statement's scan uses it to skip rows the statement itself wrote (the Halloween problem):
    each membership test first indexes the undo records appended since the previous test.
    """

    def __init__(self, buffer: WriteBuffer, token: int) -> None:
        self._buffer = buffer
        self._token = token
        self._keys: set[bytes] = set()
        self._indexed_to = -1  # undo log position indexed so far (-1: not started)
        self._rollbacks = buffer.rollbacks

    def __contains__(self, key: object) -> bool:
        self._sync()
        return key in self._keys

    def _sync(self) -> None:
        buffer = self._buffer
        mark = buffer._marks[buffer._mark_index(self._token)][1]
        undo = buffer._undo
        if self._indexed_to < mark or self._rollbacks != buffer.rollbacks:  # first use, or undone
            self._keys.clear()
            self._indexed_to = mark
            self._rollbacks = buffer.rollbacks
        for position in range(self._indexed_to, len(undo)):
            record = undo[position]
            if record[0] == _UNDO_ENTRY:
                self._keys.add(record[1])
        self._indexed_to = len(undo)
