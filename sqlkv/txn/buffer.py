"""The write buffer: a transaction's uncommitted puts, deletes and range deletes, with savepoints.

``UPDATE t SET v = 2 WHERE id = 7`` inside a transaction ends here as ``put(key, value)``: the
buffer records ``key -> value`` in a plain dict, so later reads in the same transaction see it
(read-your-writes) and the commit can hand every write to the engine as one `WriteBatch`.

State:

- ``entries``: key -> value, or key -> None for a buffered point delete (a tombstone that hides
  the snapshot's value). A dict, because the common pattern is many puts and few ordered reads
  (a bulk INSERT puts 100k+ keys and never scans them).
- the key order of ``entries`` is kept lazily: new keys wait in the list ``_unindexed`` and join
  the SortedList ``_index`` in bulk only when something needs order -- a scan, ``delete_range``,
  ``count_entries``, removing an entry (undo). A transaction that only puts never builds it: its
  commit sorts the batch once. ``_index`` and ``_unindexed`` are disjoint and together hold
  exactly the keys of ``entries``.
- ``ranges``: disjoint, merged ``[start, end)`` intervals from ``delete_range``; they hide every
  snapshot key inside them. A ``delete_range`` also drops the entries it covers, so an entry is
  always newer than any range around it: a put after a range delete stays visible.

Savepoints: while at least one savepoint is open, every mutation appends an undo record that
restores the previous state; ``rollback_to`` pops records back to the savepoint's mark. With no
savepoint open nothing is logged, so ``savepoint(); put(); release()`` -- the SQL layer's
statement atomicity -- costs O(1) beyond the put itself and a million such statements stay linear.
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter

from sortedcontainers import SortedDict, SortedList

from sqlkv.errors import OperationalError, ProgrammingError
from sqlkv.storage.kv import OP_DELETE, OP_DELETE_RANGE, OP_PUT, WriteBatch

# Rough Python overhead of one buffered entry (dict slot, index slot, bytes headers), counted
# in ``byte_size`` so the size limit tracks memory rather than only payload bytes.
ENTRY_OVERHEAD = 64

DEFAULT_MAX_TXN_BYTES = 256 * 1024 * 1024

ABSENT = object()  # "this key has no entry": ``entries.get(key, ABSENT)``, undo records

_UNDO_ENTRY = 0  # (tag, key, previous value | None | ABSENT)
_UNDO_RANGE = 1  # (tag, start of the range added, [ranges it absorbed])

# Shared by every buffer that has no range delete yet (most of them), so a transaction does not
# build a SortedDict it never uses. Never mutated: ``_add_range`` gives the buffer its own first.
_NO_RANGES: SortedDict = SortedDict()

# The same for the key index of a buffer that never needed its keys in order (every read-only
# transaction's): `sorted_index` gives the buffer its own when the first key joins.
_NO_INDEX: SortedList = SortedList()

_op_key = itemgetter(1)


class WriteBuffer:
    """Buffered writes of one transaction. Not thread-safe: a transaction belongs to one thread."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_TXN_BYTES) -> None:
        self.entries: dict[bytes, bytes | None] = {}
        self._index = _NO_INDEX  # sorted keys of ``entries``, except those in ``_unindexed``
        self._unindexed: list[bytes] = []  # keys of ``entries`` not yet in ``_index``
        self.ranges: SortedDict = _NO_RANGES  # start -> end, disjoint and merged
        self.max_bytes = max_bytes
        self.byte_size = 0
        # Bumped on every mutation, so a lazy scan knows when its cached lookahead is stale.
        self.version = 0
        self._undo: list[tuple] = []
        self._marks: list[tuple[int, int]] = []  # (savepoint token, undo log length)
        self._next_token = 1
        self.rollbacks = 0  # bumped by every rollback_to: undo-log readers must re-index

    # -- reads ---------------------------------------------------------------------------

    def covering_range(self, key: bytes) -> tuple[bytes, bytes] | None:
        """The buffered range delete containing ``key``, if any."""
        ranges = self.ranges
        i = ranges.bisect_right(key)
        if i == 0:
            return None
        start, end = ranges.peekitem(i - 1)
        return (start, end) if key < end else None

    def sorted_index(self) -> SortedList:
        """The keys of ``entries`` in order (valid until the next write)."""
        pending = self._unindexed
        if pending:
            if self._index is _NO_INDEX:
                self._index = SortedList()
            if len(pending) == 1:  # a scan after each write (UPDATE/DELETE over a range)
                self._index.add(pending[0])
            else:
                # One bulk update: SortedList re-sorts everything at once when the batch is
                # large and inserts key by key when it is small; each key is indexed once.
                self._index.update(pending)
            self._unindexed = []
        return self._index

    def sorted_keys(self) -> list[bytes]:
        """The keys of ``entries`` in order, as a new list."""
        if not self._index:
            return sorted(self.entries)  # never indexed: one sort, no SortedList built
        return list(self.sorted_index())

    def count_entries(self, start: bytes, end: bytes | None) -> int:
        """How many entries (puts and tombstones) lie in ``[start, end)``."""
        if not self.entries:
            return 0
        index = self.sorted_index()
        hi = len(index) if end is None else index.bisect_left(end)
        return max(0, hi - index.bisect_left(start))

    @property
    def write_count(self) -> int:
        """Distinct keys and ranges the commit batch will carry."""
        return len(self.entries) + len(self.ranges)

    def to_batch(self) -> WriteBatch:
        """The commit's batch: range deletes first, then entries in key order.

        Ranges go first because a batch applies in order and entries are newer than ranges.
        Tombstones inside a buffered range are redundant and left out. The ops are built in
        the dict's order and sorted once by key (keys are distinct), which is cheaper than
        walking the keys in order and looking each value up.
        """
        batch = WriteBatch()
        ranges = self.ranges
        entry_ops = [
            (OP_PUT, k, v) if v is not None else (OP_DELETE, k, None) for k, v in self.entries.items()
        ]
        if ranges:
            entry_ops = [
                op for op in entry_ops if op[0] == OP_PUT or self.covering_range(op[1]) is None
            ]
        entry_ops.sort(key=_op_key)
        if ranges:
            batch.ops = [(OP_DELETE_RANGE, start, end) for start, end in ranges.items()]
            batch.ops.extend(entry_ops)
        else:
            batch.ops = entry_ops
        batch.byte_size = max(0, self.byte_size - ENTRY_OVERHEAD * self.write_count)
        return batch

    # -- writes --------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None) -> None:
        """Buffer ``key -> value`` (``value=None``: a point delete)."""
        entries = self.entries
        previous = entries.get(key, ABSENT)
        new_size = self.byte_size + len(key) + ENTRY_OVERHEAD
        if value is not None:
            new_size += len(value)
        if previous is not ABSENT:
            new_size -= len(key) + ENTRY_OVERHEAD
            if previous is not None:
                new_size -= len(previous)  # type: ignore[arg-type]
        if new_size > self.max_bytes:
            self._refuse(new_size)
        if self._marks:
            self._undo.append((_UNDO_ENTRY, key, previous))
        entries[key] = value
        if previous is ABSENT:
            self._unindexed.append(key)
        self.byte_size = new_size
        self.version += 1

    def put_new(self, key: bytes, value: bytes) -> None:
        """`put` for a key the caller has just seen has no entry (``put_if_absent``'s path)."""
        new_size = self.byte_size + len(key) + len(value) + ENTRY_OVERHEAD
        if new_size > self.max_bytes:
            self._refuse(new_size)
        if self._marks:
            self._undo.append((_UNDO_ENTRY, key, ABSENT))
        self.entries[key] = value
        self._unindexed.append(key)
        self.byte_size = new_size
        self.version += 1

    def put_new_batch(self, pairs: list[tuple[bytes, bytes]]) -> bool:
        """`put_new` of every pair, or of none (False) when two share a key or the buffer would
        outgrow its limit. The caller has checked that no key has an entry."""
        new = dict(pairs)
        if len(new) != len(pairs):
            return False
        new_size = self.byte_size + sum(map(len, new)) + sum(map(len, new.values())) + ENTRY_OVERHEAD * len(new)
        if new_size > self.max_bytes:
            return False
        if self._marks:
            self._undo.extend(zip(repeat(_UNDO_ENTRY), new, repeat(ABSENT)))
        self.entries.update(new)
        self._unindexed.extend(new)
        self.byte_size = new_size
        self.version += len(pairs)
        return True

    def _refuse(self, new_size: int) -> None:
        raise OperationalError(
            f"transaction too large: {new_size} bytes buffered in {self.write_count + 1} "
            f"writes exceeds the limit of {self.max_bytes} bytes (max_txn_bytes); split the "
            f"work into smaller transactions"
        )

    def delete_range(self, start: bytes, end: bytes) -> None:
        """Hide every key in ``[start, end)``: drop covered entries, add a merged range."""
        if end <= start:
            return
        logging = bool(self._marks)
        if self.entries:
            covered = list(self.sorted_index().irange(start, end, inclusive=(True, False)))
            for key in covered:
                previous = self.entries[key]
                if logging:
                    self._undo.append((_UNDO_ENTRY, key, previous))
                self._set_entry(key, ABSENT, previous)
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
        if not ranges:
            return []
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
        """Set (or with ``value=ABSENT`` remove) an entry, keeping byte_size and the index exact."""
        if previous is not ABSENT:
            self.byte_size -= _entry_size(key, previous)  # type: ignore[arg-type]
        if value is ABSENT:
            if previous is not ABSENT:
                del self.entries[key]
                self.sorted_index().remove(key)
        else:
            self.entries[key] = value  # type: ignore[assignment]
            if previous is ABSENT:
                self._unindexed.append(key)
            self.byte_size += _entry_size(key, value)  # type: ignore[arg-type]
        self.version += 1

    def _add_range(self, start: bytes, end: bytes) -> None:
        if self.ranges is _NO_RANGES:
            self.ranges = SortedDict()
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
        self._next_token = token + 1
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
        marks = self._marks
        if marks and marks[-1][0] == token:  # the statement pattern: the innermost one
            marks.pop()
        else:
            del marks[self._mark_index(token) :]
        if not marks and self._undo:
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
            self._set_entry(key, previous, self.entries.get(key, ABSENT))
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
