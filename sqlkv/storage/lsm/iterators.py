"""Scans: per-source cursors and the merge that turns them into visible ``(key, value)`` pairs.

Every source -- a memtable, an L0 table, a whole level L1.. -- is a *cursor* handing out chunks
of parallel lists ``(keys, seqs, values, simple_seq)`` in ascending (key, seq descending)
order, already clipped to the scan's range; a reverse cursor hands out its chunks from the top
of the range down. All versions of a key sit in one chunk.

The merge works in *runs* rather than entry by entry: it finds the source whose current key is
smallest (largest, in reverse) and the next-smallest current key among the others, bisects to
the end of the run of entries below that bound, and emits the whole run from that one source
(forward, a long visible run as a ``zip`` of two slices, short runs and ties gathered in a
list: `merged_chunks` hands these to ``list.extend``, so one big source with a few scattered
entries in the others costs a bisect per scattered entry rather than a step per pair).
A table source whose current key lies in a range-tombstone fragment deleted above every seq
in that table jumps past the fragment (a seek, not a walk), so a scan right after a mass
``delete_range`` costs about what a scan of the survivors costs. When only one source overlaps
the range (the usual short scan: the engine opens cursors only on sources whose key range, or
memtable, can hold a key of the span) and no range tombstone exists, there is no merge at all,
and a chunk that is
"simple" (one version per key, no tombstones, every seq visible) is emitted with a single
``zip``. Keys present in several sources at once are resolved one at a time (a "tie"): the
newest version at or below the read seq wins. Point tombstones and range tombstones (checked
with two bisects each) hide versions.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from itertools import chain

from sqlkv.storage.lsm.memtable import Memtable
from sqlkv.storage.lsm.rangedel import TombstoneIndex, any_covers, none_between, skip_target
from sqlkv.storage.lsm.sstable.block import NEVER_SIMPLE
from sqlkv.storage.lsm.sstable.reader import TableReader

Chunk = tuple[list, list, list, int]
_NO_TOMBS: list = []


class MemCursor:
    """Pages of a memtable, cut under its lock so the writer can keep going."""

    def __init__(self, mem: Memtable, start: bytes, end: bytes | None, reverse: bool) -> None:
        self.mem = mem
        self.lo, self.hi = start, end
        self.lo_inclusive = True
        self.reverse = reverse
        self.done = False

    max_seq = None  # a memtable may hold entries newer than any tombstone: never skipped

    def next_chunk(self) -> Chunk | None:
        if self.done:
            return None
        keys, seqs, values, more = self.mem.page(self.lo, self.hi, self.lo_inclusive, False, self.reverse)
        if not more:
            self.done = True
        if not keys:
            return None
        if self.reverse:
            self.hi = keys[0]
        else:
            self.lo, self.lo_inclusive = keys[-1], False
        simple = NEVER_SIMPLE
        if len(keys) == len(set(keys)) and None not in values:
            simple = max(seqs)
        return keys, seqs, values, simple


class TableCursor:
    """The blocks of one table that meet ``[start, end)``, in scan order."""

    def __init__(self, reader: TableReader, start: bytes, end: bytes | None, reverse: bool,
                 max_seq: int = 1 << 62) -> None:
        self.reader = reader
        self.max_seq = max_seq  # of the table: a range tombstone above it hides whole stretches
        self.reverse = reverse
        self._position(start, end)

    def _position(self, start: bytes, end: bytes | None) -> None:
        self.start, self.end = start, end
        self.first = self.reader.first_block_for(start)
        self.last = self.reader.last_block_for(end)
        self.next_block = self.last if self.reverse else self.first

    def seek(self, bound: bytes, tomb_seq: int = 0) -> None:
        """Continue at keys >= ``bound`` (forward) or < ``bound`` (reverse)."""
        if self.reverse:
            if self.end is None or bound < self.end:
                self._position(self.start, bound)
        elif bound > self.start:
            self._position(bound, self.end)

    def next_chunk(self) -> Chunk | None:
        while self.first <= self.next_block <= self.last:
            i = self.next_block
            self.next_block += -1 if self.reverse else 1
            blk = self.reader.block(i)
            keys = blk.keys
            lo, hi = 0, len(keys)
            if i == self.first and keys and keys[0] < self.start:
                lo = bisect_left(keys, self.start)
            if self.end is not None and i == self.last and keys and keys[-1] >= self.end:
                hi = bisect_left(keys, self.end)
            if lo >= hi:
                continue
            if lo == 0 and hi == len(keys):
                return keys, blk.seqs, blk.values, blk.simple_seq
            return keys[lo:hi], blk.seqs[lo:hi], blk.values[lo:hi], blk.simple_seq
        return None


class LevelCursor:
    """The tables of one level L1.. (disjoint, sorted) chained in scan order.

    ``tables`` are ``(reader, smallest, largest, max_seq)``.
    """

    def __init__(self, tables: list[tuple], start: bytes, end: bytes | None, reverse: bool) -> None:
        self.tables = list(reversed(tables)) if reverse else list(tables)
        self.start, self.end, self.reverse = start, end, reverse
        self.current: TableCursor | None = None
        self.max_seq: int | None = None

    def seek(self, bound: bytes, tomb_seq: int) -> None:
        """Jump to ``bound`` in the current table (whose ``max_seq`` justified it), then drop the
        following tables that lie wholly before ``bound`` and are older than the tombstone
        (``tomb_seq``); stop at the first that is not -- it may hold newer entries."""
        if self.current is not None:
            self.current.seek(bound)
        tables = self.tables
        drop = 0
        for _, smallest, largest, max_seq in tables:
            inside = smallest >= bound if self.reverse else largest < bound
            if not inside or max_seq >= tomb_seq:
                break
            drop += 1
        if drop:
            del tables[:drop]

    def next_chunk(self) -> Chunk | None:
        while True:
            if self.current is not None:
                chunk = self.current.next_chunk()
                if chunk is not None:
                    return chunk
            if not self.tables:
                return None
            reader, _, _, max_seq = self.tables.pop(0)
            self.current = TableCursor(reader, self.start, self.end, self.reverse, max_seq)
            self.max_seq = max_seq


class _Head:
    """A cursor's current chunk and position within it."""

    __slots__ = ("cursor", "keys", "seqs", "values", "simple", "pos")

    def __init__(self, cursor) -> None:
        self.cursor = cursor
        self.keys: list = []
        self.seqs: list = []
        self.values: list = []
        self.simple = NEVER_SIMPLE
        self.pos = 0

    def advance(self, reverse: bool) -> bool:
        """Load the next chunk; False when the cursor is exhausted."""
        chunk = self.cursor.next_chunk()
        if chunk is None:
            return False
        self.keys, self.seqs, self.values, self.simple = chunk
        self.pos = len(self.keys) - 1 if reverse else 0
        return True


def merge(cursors: list, read_seq: int, tombs: list[TombstoneIndex], reverse: bool) -> Iterator[tuple[bytes, bytes]]:
    """Visible pairs at ``read_seq`` from all cursors, in scan order."""
    return chain.from_iterable(merged_chunks(cursors, read_seq, tombs, reverse))


def merged_chunks(cursors: list, read_seq: int, tombs: list[TombstoneIndex],
                  reverse: bool) -> Iterator[Iterable[tuple[bytes, bytes]]]:
    """`merge`'s pairs as iterables to ``list.extend`` with (a batched read), so the pairs never
    pass through a generator one by one: from a single source with no range tombstone, one
    per chunk -- a plain ``zip`` for a simple chunk; from several sources going forward, one
    per run of a source (`_merge_forward`); a reverse merge is one per-pair iterator. Each
    iterable must be exhausted before the next is asked for. Heads are loaded (the seek)
    now, or by the first ``next`` for a single source."""
    if len(cursors) == 1 and not any(tombs):
        return _single_source_chunks(cursors[0], read_seq, reverse)
    tombs = [t for t in tombs if t]
    heads = []
    for cursor in cursors:
        head = _Head(cursor)
        if head.advance(reverse):
            heads.append(head)
    if reverse:
        return iter([_merge_reverse(heads, read_seq, tombs)])
    if len(heads) == 2 and not tombs:
        return _merge_two_forward(heads[0], heads[1], read_seq)
    return _merge_forward(heads, read_seq, tombs)


def _single_source_chunks(cursor, read_seq: int, reverse: bool) -> Iterator[Iterable[tuple[bytes, bytes]]]:
    """The short-scan fast path: one source and no range tombstones, so no merging -- each
    chunk (which holds every version of its keys) is filtered on its own."""
    head = _Head(cursor)
    while head.advance(reverse):
        if reverse:
            yield _run_reverse(head, 0, len(head.keys) - 1, read_seq, [])
        elif head.simple <= read_seq:  # every entry visible: the chunk as it is
            yield zip(head.keys, head.values)
        else:
            yield _run_forward(head, 0, len(head.keys), read_seq, _NO_TOMBS)


def _chunks_forward(head: _Head, read_seq: int) -> Iterator[Iterable[tuple[bytes, bytes]]]:
    """The visible pairs of each of ``head``'s next chunks, one iterable per chunk."""
    while head.advance(False):
        yield _run_forward(head, 0, len(head.keys), read_seq, _NO_TOMBS)


def _skip(head: _Head, tombs: list, read_seq: int, reverse: bool) -> bool:
    """Jump a table source past a stretch a range tombstone hides; True if it moved."""
    max_seq = head.cursor.max_seq
    if max_seq is None:
        return False
    target = skip_target(tombs, head.keys[head.pos], read_seq, max_seq, reverse)
    if target is None:
        return False
    head.cursor.seek(*target)
    if not head.advance(reverse):
        head.keys, head.pos = [], -1 if reverse else 0
    return True


def _merge_forward(heads: list[_Head], read_seq: int, tombs: list) -> Iterator[Iterable[tuple[bytes, bytes]]]:
    """Runs of one source at a time: the head with the smallest current key gives every entry
    below the smallest current key of the others (one bisect). A run of `LONG_RUN` entries or
    more goes out as it is (a ``zip`` of two slices when all of it is visible); shorter runs
    and the keys several sources hold (ties) gather in a list handed out before the next long
    run -- so one big source with a few scattered entries in the others costs a bisect and a
    slice per scattered entry, not a step per pair."""
    pending: list[tuple[bytes, bytes]] = []
    while heads:
        # The head with the smallest current key, and the smallest key among the others.
        head = heads[0]
        head_key = head.keys[head.pos]
        bound = None
        for other in heads[1:]:
            key = other.keys[other.pos]
            if key < head_key:
                bound, head, head_key = head_key, other, key
            elif bound is None or key < bound:
                bound = key
        if tombs and _skip(head, tombs, read_seq, False):
            heads = [h for h in heads if h.pos < len(h.keys)]
            continue
        keys, pos = head.keys, head.pos
        run_end = len(keys) if bound is None else bisect_left(keys, bound, pos)
        if run_end == pos:  # the key is in several sources: the newest visible version wins
            pair = _tie_forward(heads, head_key, read_seq, tombs)
            if pair is not None:
                pending.append(pair)
            heads = [h for h in heads if h.pos < len(h.keys) or h.advance(False)]
        elif run_end - pos < LONG_RUN:
            pending.extend(_run_forward(head, pos, run_end, read_seq, tombs))
        else:
            run = _run_forward(head, pos, run_end, read_seq, tombs)
            if pending:
                yield pending
                pending = []
            yield run
        if run_end > pos:
            head.pos = run_end
            if run_end == len(keys) and not head.advance(False):
                heads = [h for h in heads if h is not head]
        if len(pending) >= LONG_RUN:  # interleaved sources: hand out what a reader may be waiting for
            yield pending
            pending = []
    if pending:
        yield pending


LONG_RUN = 32  # a run at least this long is handed out on its own rather than copied


def _merge_two_forward(a: _Head, b: _Head, read_seq: int) -> Iterator[Iterable[tuple[bytes, bytes]]]:
    """`_merge_forward` for the usual merged scan -- a big source (the table's level) and one
    small one (the memtable's scattered updates and deletes), no range tombstone -- with
    the general loop's per-step costs gone: no search for the smallest head, no tombstone
    checks, no list of heads rebuilt after a tie. Once a source runs out, the other's
    remaining chunks go out whole, as from a single source."""
    pending: list[tuple[bytes, bytes]] = []
    while True:
        akey, bkey = a.keys[a.pos], b.keys[b.pos]
        if bkey < akey:
            a, b, akey, bkey = b, a, bkey, akey
        if akey == bkey:  # the key is in both: the newest visible version wins
            pair = _tie_forward((a, b), akey, read_seq, _NO_TOMBS)
            if pair is not None:
                pending.append(pair)
        else:  # ``a`` up to ``b``'s key
            pos = a.pos
            end = bisect_left(a.keys, bkey, pos)
            if end - pos < LONG_RUN:
                pending.extend(_run_forward(a, pos, end, read_seq, _NO_TOMBS))
            else:
                if pending:
                    yield pending
                    pending = []
                yield _run_forward(a, pos, end, read_seq, _NO_TOMBS)
            a.pos = end
        if a.pos == len(a.keys) and not a.advance(False):
            rest = b
            break
        if b.pos == len(b.keys) and not b.advance(False):
            rest = a
            break
        if len(pending) >= LONG_RUN:
            yield pending
            pending = []
    if pending:
        yield pending
    if rest.pos < len(rest.keys):
        yield _run_forward(rest, rest.pos, len(rest.keys), read_seq, _NO_TOMBS)
    yield from _chunks_forward(rest, read_seq)


def _run_forward(head: _Head, a: int, b: int, read_seq: int, tombs: list) -> Iterable[tuple[bytes, bytes]]:
    """The visible pairs of entries ``a..b-1`` of ``head``: the slices themselves when every
    entry is visible and no range tombstone meets the run, else a list built entry by entry."""
    keys, seqs, values = head.keys, head.seqs, head.values
    if tombs and none_between(tombs, keys[a], keys[b - 1]):
        tombs = _NO_TOMBS  # the run lies between fragments: no per-entry checks
    if head.simple <= read_seq and not tombs:
        if a == 0 and b == len(keys):
            return zip(keys, values)
        return zip(keys[a:b], values[a:b])
    out = []
    i = a
    while i < b:
        key = keys[i]
        while i < b and keys[i] == key and seqs[i] > read_seq:
            i += 1
        if i < b and keys[i] == key:
            value = values[i]
            if value is not None and not (tombs and any_covers(tombs, key, seqs[i], read_seq)):
                out.append((key, value))
            i += 1
            while i < b and keys[i] == key:
                i += 1
    return out


def _tie_forward(heads: list[_Head], key: bytes, read_seq: int, tombs: list) -> tuple[bytes, bytes] | None:
    best_seq, best_value = -1, None
    for head in heads:
        keys, seqs = head.keys, head.seqs
        j, n = head.pos, len(keys)
        while j < n and keys[j] == key:
            if best_seq < seqs[j] <= read_seq:
                best_seq, best_value = seqs[j], head.values[j]
            j += 1
        head.pos = j
    if best_seq < 0 or best_value is None:
        return None
    if tombs and any_covers(tombs, key, best_seq, read_seq):
        return None
    return key, best_value


def _merge_reverse(heads: list[_Head], read_seq: int, tombs: list) -> Iterator[tuple[bytes, bytes]]:
    while heads:
        head = heads[0]
        head_key = head.keys[head.pos]
        bound = None
        for other in heads[1:]:
            key = other.keys[other.pos]
            if key > head_key:
                bound, head, head_key = head_key, other, key
            elif bound is None or key > bound:
                bound = key
        if tombs and _skip(head, tombs, read_seq, True):
            heads = [h for h in heads if h.pos >= 0]
            continue
        pos = head.pos
        run_start = 0 if bound is None else bisect_right(head.keys, bound, 0, pos + 1)
        if run_start <= pos:
            yield from _run_reverse(head, run_start, pos, read_seq, tombs)
            head.pos = run_start - 1
        else:
            pair = _tie_reverse(heads, head_key, read_seq, tombs)
            if pair is not None:
                yield pair
            heads = [h for h in heads if h.pos >= 0 or h.advance(True)]
            continue
        if run_start == 0 and not head.advance(True):
            heads = [h for h in heads if h is not head]


def _run_reverse(head: _Head, a: int, top: int, read_seq: int, tombs: list) -> Iterator[tuple[bytes, bytes]]:
    """Entries ``a..top`` (inclusive) in descending key order."""
    keys, seqs, values = head.keys, head.seqs, head.values
    if tombs and none_between(tombs, keys[a], keys[top]):
        tombs = _NO_TOMBS
    if head.simple <= read_seq and not tombs:
        yield from zip(reversed(keys[a: top + 1]), reversed(values[a: top + 1]))
        return
    i = top
    while i >= a:
        key = keys[i]
        g = i
        while g > a and keys[g - 1] == key:
            g -= 1
        for j in range(g, i + 1):  # versions newest first
            if seqs[j] <= read_seq:
                value = values[j]
                if value is not None and not (tombs and any_covers(tombs, key, seqs[j], read_seq)):
                    yield key, value
                break
        i = g - 1


def _tie_reverse(heads: list[_Head], key: bytes, read_seq: int, tombs: list) -> tuple[bytes, bytes] | None:
    best_seq, best_value = -1, None
    for head in heads:
        keys, seqs = head.keys, head.seqs
        j = head.pos
        while j >= 0 and keys[j] == key:
            if best_seq < seqs[j] <= read_seq:
                best_seq, best_value = seqs[j], head.values[j]
            j -= 1
        head.pos = j
    if best_seq < 0 or best_value is None:
        return None
    if tombs and any_covers(tombs, key, best_seq, read_seq):
        return None
    return key, best_value
