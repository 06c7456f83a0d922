"""A k-way merge of sorted runs that hands out sorted lists, its comparisons made in C.

`heapq.merge` steps a Python generator once per item (about 1 us each: a second per million
items merged). CREATE INDEX merges its spilled runs of index keys (ddl/index_ingest.py) a list
at a time instead. Each run is an iterator of sorted lists or tuples (a spilled run's pickled
chunks, spill.py `read_lists`) whose concatenation is sorted. Every round:

1. the *fence* is the smallest last item among the runs' current lists;
2. from each run, the items up to and including the fence are cut (one `bisect_right`): no
   item still unread in any run is below the fence (a run's later lists start at or above its
   current list's last item, which is at or above the fence), so these are all the items
   ``<= fence`` left;
3. they are sorted together -- `list.sort` finds the k sorted pieces and merges them in C --
   and handed out as one list. The run whose list ended at the fence moves to its next list.

The output is the runs' items in sorted order; equal items keep no particular run order (the
callers' items are distinct, or carry a tiebreaker). Memory: one list per run plus the output.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any


def merged_lists(runs: Iterable[Iterable[Sequence]], key: Callable[[Any], Any] | None = None
                 ) -> Iterator[Sequence]:
    """The items of the sorted ``runs`` (each an iterable of sorted lists or tuples), sorted, a
    list at a time (a run's own lists or tuples once it is the last one left). ``key``: the
    sort key of each round's pieces, which must order them as the items themselves do (the
    fence is found by comparing items); equal keys keep run order."""
    heads: list[list[Any]] = []  # [current list, position in it, the run's iterator]
    for run in runs:
        it = iter(run)
        first = next((chunk for chunk in it if chunk), None)
        if first is not None:
            heads.append([first, 0, it])
    while len(heads) > 1:
        fence = min(head[0][-1] for head in heads)
        out: list = []
        for head in heads:
            chunk, at = head[0], head[1]
            cut = bisect_right(chunk, fence, at)
            out += chunk[at:cut] if at or cut < len(chunk) else chunk
            if cut < len(chunk):
                head[1] = cut
            else:  # used up: the run's next list, if any
                head[0] = next((chunk for chunk in head[2] if chunk), None)
                head[1] = 0
        heads = [head for head in heads if head[0] is not None]
        out.sort(key=key)
        yield out
    if heads:  # one run left: its lists as they are
        chunk, at, it = heads[0]
        yield chunk[at:]
        yield from (chunk for chunk in it if chunk)
