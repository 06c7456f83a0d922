"""The two-source merge (`iterators._merge_two_forward`: a table's level under the memtable)
against a model: random keys, versions (puts and deletes, unique sequence numbers, either
source the newer), chunk cuts and read sequence numbers; the visible pairs must be the
newest version at or below the read seq of each key, deletes hiding it, in key order, and
the lists handed out stay small when the sources interleave."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from sqlkv.storage.lsm.iterators import LONG_RUN, merged_chunks
from sqlkv.storage.lsm.sstable.block import NEVER_SIMPLE


class ListCursor:
    """A source handing out ``entries`` (key, seq, value) in chunks cut at ``cuts``."""

    max_seq = None

    def __init__(self, entries: list[tuple[bytes, int, bytes | None]], cuts: list[int]) -> None:
        entries = sorted(entries, key=lambda e: (e[0], -e[1]))
        keys = sorted({e[0] for e in entries})
        self.chunks = []
        at = 0
        for n in cuts + [len(keys)]:
            part = set(keys[at:at + max(n, 1)])
            at += max(n, 1)
            chunk = [e for e in entries if e[0] in part]
            if chunk:
                self.chunks.append(chunk)
            if at >= len(keys):
                break

    def next_chunk(self):
        if not self.chunks:
            return None
        chunk = self.chunks.pop(0)
        keys = [e[0] for e in chunk]
        values = [e[2] for e in chunk]
        seqs = [e[1] for e in chunk]
        simple = max(seqs) if len(set(keys)) == len(keys) and None not in values else NEVER_SIMPLE
        return keys, seqs, values, simple


def _visible(sources: list[list[tuple]], read_seq: int) -> list[tuple[bytes, bytes]]:
    newest: dict[bytes, tuple[int, bytes | None]] = {}
    for entries in sources:
        for key, seq, value in entries:
            if seq <= read_seq and seq > newest.get(key, (-1, None))[0]:
                newest[key] = (seq, value)
    return [(k, v) for k, (_s, v) in sorted(newest.items()) if v is not None]


key_st = st.integers(0, 60).map(lambda i: b"k%03d" % i)
entry_st = st.tuples(key_st, st.one_of(st.none(), st.binary(max_size=3)))


@settings(max_examples=300, deadline=None)
@given(big=st.lists(entry_st, max_size=80), small=st.lists(entry_st, max_size=25),
       big_cuts=st.lists(st.integers(1, 30), max_size=6), small_cuts=st.lists(st.integers(1, 10), max_size=6),
       read_at=st.floats(0, 1.2), swap=st.booleans())
def test_two_source_merge_is_the_model(big, small, big_cuts, small_cuts, read_at, swap) -> None:
    # unique seqs; the small source is mostly newer, as a memtable over a table, but not always
    entries_big = [(k, 2 * i + 1, v) for i, (k, v) in enumerate(big)]
    entries_small = [(k, 2 * i + (80 if i % 3 else 0), v) for i, (k, v) in enumerate(small)]
    top = max([e[1] for e in entries_big + entries_small], default=0)
    read_seq = int(top * read_at)
    cursors = [ListCursor(entries_big, big_cuts), ListCursor(entries_small, small_cuts)]
    if swap:
        cursors.reverse()
    chunks = [list(chunk) for chunk in merged_chunks(cursors, read_seq, [], False)]
    assert [pair for chunk in chunks for pair in chunk] == _visible([entries_big, entries_small], read_seq)


def test_spliced_lists_stay_small_when_sources_interleave() -> None:
    """Sources taking turns key by key: each list handed out holds at most about twice
    `LONG_RUN` pairs, not a whole chunk of each merged at once."""
    evens = [(b"k%04d" % i, 1, b"e") for i in range(0, 2000, 2)]
    odds = [(b"k%04d" % i, 2, b"o") for i in range(1, 2000, 2)]
    chunks = [list(c) for c in merged_chunks([ListCursor(evens, [500]), ListCursor(odds, [400])], 10, [], False)]
    assert sum(map(len, chunks)) == 2000
    assert max(map(len, chunks)) <= 2 * LONG_RUN
