"""A forward scan of the LSM handed out as ``(keys, values)`` lists: for a bulk reader (CREATE
INDEX's backfill) that wants a table's keys and values apart.

`RangeReader.read` hands out pairs: a tuple built per key, unpacked again by the reader, and
tracked by the garbage collector until a collection sees it holds only bytes -- a 100k-row scan
is some 140 young collections, and when one of them is a full collection it walks every list
the block cache holds. Here no tuple is built where the sources allow it:

- one source and no range tombstone: each chunk (a block, a memtable page) whose entries are
  all visible goes out as its own two lists (copied into the batch, never handed out);
- two sources and no range tombstone (a table's level and the memtable's scattered updates
  and deletes, the usual state after some writes): while one side's chunk is simple (every
  entry visible, one version per key: a table's block), the other side's entries are spliced
  into it (`_splice`: per entry of the sparse side one bisect and one slice of the dense
  side, no per-entry work on the dense side); otherwise merged run by run as
  `_merge_two_forward` merges them, each run appended to the batch's two lists as slices;
- anything else (range tombstones, three or more sources, chunks holding versions the
  snapshot does not see): `merged_chunks`' pairs, transposed.

The pairs are the ones `RangeReader` would hand out, in the same order (tested against it).
"""

from __future__ import annotations

import time

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from sqlkv.storage.kv import columns_of
from sqlkv.storage.lsm.iterators import _NO_TOMBS, _Head, _run_forward, _tie_forward, merged_chunks

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore

Columns = tuple[list[bytes], list[bytes]]


def scan_columns(core: LSMCore, start: bytes, end: bytes | None, seq: int, size: int,
                 check: Callable[[], None]) -> Iterator[Columns]:
    """The visible pairs of ``[start, end)`` at ``seq`` as ``(keys, values)`` lists of at least
    ``size`` pairs each (the last may be shorter; none is empty). ``check`` runs before each
    list (it raises once the snapshot is closed). The version read is pinned meanwhile."""
    core.check_open()
    if end is not None and end <= start:
        return
    started = time.perf_counter_ns()
    with core.lock:
        state = core.read_state
        version = state.version
        version.pins += 1
        core.pinned[id(version)] = version
    try:
        cursors, tombs = core._cursors(state, start, end, False)
        for batch in _batches(_chunks(cursors, seq, [t for t in tombs if t]), size):
            check()
            core.check_open()
            if started:  # the seek and first batch: timed as a scan's first pairs (range_reader.py)
                core.latency["scan"].record(time.perf_counter_ns() - started)
                started = 0
            yield batch
    finally:
        core.unpin(version)


def _chunks(cursors: list, seq: int, tombs: list) -> Iterator[Columns]:
    """The visible pairs, in key order, as successive (possibly empty) column pairs."""
    if tombs or len(cursors) > 2:
        for chunk in merged_chunks(cursors, seq, tombs, False):
            yield columns_of(chunk)
        return
    heads = [head for head in map(_Head, cursors) if head.advance(False)]
    if len(heads) == 2:
        rest = yield from _merge_two(heads[0], heads[1], seq)
        heads = [rest]
    for head in heads:
        yield _run(head, head.pos, len(head.keys), seq)
        while head.advance(False):
            yield _run(head, 0, len(head.keys), seq)


def _merge_two(a: _Head, b: _Head, seq: int) -> Iterator[Columns]:
    """Merge two loaded heads until one runs out; return the other (its current chunk from its
    position on not yet handed out). A key in both goes to `_tie_forward` (the newest
    visible version wins, a tombstone hides it); a run of one source up to the other's key is
    appended as slices."""
    keys: list[bytes] = []
    values: list[bytes] = []
    while True:
        dense = _dense_side(a, b, seq)
        if dense is not None:
            _splice(dense, b if dense is a else a, seq, keys, values)
        else:
            _step(a, b, seq, keys, values)
        rest = _survivor(a, b)
        if rest is not None:
            break
        if len(keys) >= _CHUNK:
            yield keys, values
            keys, values = [], []
    yield keys, values
    return rest


def _step(a: _Head, b: _Head, seq: int, keys: list[bytes], values: list[bytes]) -> None:
    """One step of the run-by-run merge: the key both heads are at (the newest visible
    version wins), or the run of the head behind up to the other's key."""
    akey, bkey = a.keys[a.pos], b.keys[b.pos]
    if bkey < akey:
        a, b, akey, bkey = b, a, bkey, akey
    if akey == bkey:
        pair = _tie_forward([a, b], akey, seq, _NO_TOMBS)
        if pair is not None:
            keys.append(pair[0])
            values.append(pair[1])
    else:
        end = bisect_left(a.keys, bkey, a.pos)
        run_keys, run_values = _run(a, a.pos, end, seq)
        keys += run_keys
        values += run_values
        a.pos = end


def _dense_side(a: _Head, b: _Head, seq: int) -> _Head | None:
    """The head whose chunk the other's entries can be spliced into: one whose chunk is
    simple at ``seq`` (the longer one when both are), or None."""
    a_simple, b_simple = a.simple <= seq, b.simple <= seq
    if a_simple and (not b_simple or len(a.keys) - a.pos >= len(b.keys) - b.pos):
        return a
    return b if b_simple else None


def _splice(dense: _Head, sparse: _Head, seq: int, keys: list[bytes], values: list[bytes]) -> None:
    """Merge the entries of ``sparse``'s chunk up to the last key of ``dense``'s chunk (which
    is simple at ``seq``: one visible version per key) into the lists: the stretches of
    ``dense`` between them go out as slices. A key in both goes out in its newest version
    (hidden if that is a tombstone). Stops where ``sparse``'s chunk runs out (its next
    chunk may hold keys below ``dense``'s last) or at the end of ``dense``'s chunk."""
    dkeys, dseqs, dvalues, i = dense.keys, dense.seqs, dense.values, dense.pos
    n = len(dkeys)
    skeys, sseqs, svalues, j = sparse.keys, sparse.seqs, sparse.values, sparse.pos
    stop = bisect_right(skeys, dkeys[-1], j)
    while j < stop:
        key = skeys[j]
        at = bisect_left(dkeys, key, i)
        if at > i:
            keys += dkeys[i:at]
            values += dvalues[i:at]
        version, value = -1, None  # the sparse side's newest visible version (newest first)
        while j < stop and skeys[j] == key:
            if version < 0 and sseqs[j] <= seq:
                version, value = sseqs[j], svalues[j]
            j += 1
        i = at
        if at < n and dkeys[at] == key:
            i = at + 1
            if dseqs[at] > version:
                version, value = dseqs[at], dvalues[at]
        if version >= 0 and value is not None:
            keys.append(key)
            values.append(value)
    sparse.pos = j
    if stop < len(skeys):  # the sparse side's next key lies past this chunk: the rest goes out
        keys += dkeys[i:] if i else dkeys
        values += dvalues[i:] if i else dvalues
        i = n
    dense.pos = i


def _survivor(a: _Head, b: _Head) -> _Head | None:
    """Load the next chunk of a head whose chunk is used up; the other head once one of them
    has no more (None while both have entries left)."""
    for head, other in ((a, b), (b, a)):
        if head.pos == len(head.keys) and not head.advance(False):
            return other
    return None


_CHUNK = 1024  # merged pairs gathered before they go out (the batches are cut from them)


def _run(head: _Head, a: int, b: int, seq: int) -> Columns:
    """Entries ``a..b-1`` of ``head``'s chunk, visible ones only: slices of its lists when
    every entry is visible (`_run_forward` would zip them), else its pairs transposed."""
    if head.simple <= seq:
        if a == 0 and b == len(head.keys):
            return head.keys, head.values
        return head.keys[a:b], head.values[a:b]
    return columns_of(_run_forward(head, a, b, seq, _NO_TOMBS))


def _batches(chunks: Iterator[Columns], size: int) -> Iterator[Columns]:
    """The chunks gathered into lists of at least ``size`` pairs (new lists: a chunk may be a
    cached block's own)."""
    keys: list[bytes] = []
    values: list[bytes] = []
    for chunk_keys, chunk_values in chunks:
        keys += chunk_keys
        values += chunk_values
        if len(keys) >= size:
            yield keys, values
            keys, values = [], []
    if keys:
        yield keys, values
