"""exec/merge_lists.py: sorted runs of sorted lists merged a list at a time, against sorted()."""

from __future__ import annotations

import random

import pytest

from sqlkv.sql.exec.merge_lists import merged_lists
from sqlkv.sql.exec.spill import read_lists, spill_run


def _run_of(items: list, rng: random.Random) -> list:
    """``items`` sorted and cut into lists (or tuples, as CREATE INDEX's runs) of uneven
    lengths, empty ones among them."""
    items = sorted(items)
    kind = rng.choice([list, tuple])
    out, at = [kind()], 0
    while at < len(items):
        size = rng.choice([0, 1, 2, 7, 50, 300])
        out.append(kind(items[at:at + size]))
        at += size
    return out


@pytest.mark.parametrize("seed", range(12))
def test_merge_gives_every_item_in_sorted_order(seed):
    rng = random.Random(seed)
    universe = rng.choice([20, 1000, 10**9])  # small: many equal items across runs
    runs = [[rng.randrange(universe) for _ in range(rng.randrange(0, 2000))] for _ in range(rng.randrange(0, 7))]
    lists = list(merged_lists([_run_of(run, rng) for run in runs]))
    assert all(lists), "no empty list is handed out"
    assert [x for chunk in lists for x in chunk] == sorted(x for run in runs for x in run)


def test_merge_of_byte_keys_and_pairs():
    rng = random.Random(3)
    keys = [rng.randbytes(rng.randrange(1, 6)) for _ in range(3000)]
    pairs = [(key, b"v%d" % i) for i, key in enumerate(keys)]
    for items in (keys, pairs):
        runs = [_run_of(items[i::4], rng) for i in range(4)]
        assert [x for chunk in merged_lists(runs) for x in chunk] == sorted(items)


def test_merge_reads_spilled_runs_lazily():
    rng = random.Random(5)
    runs = [sorted(rng.randrange(10**6) for _ in range(5000)) for _ in range(3)]
    files = [spill_run(run, 100, "test") for run in runs]
    merged = merged_lists([read_lists(f) for f in files])
    first = next(merged)
    assert len(first) < 1000  # one list per run at a time, not whole runs
    rest = [x for chunk in merged for x in chunk]
    assert first + rest == sorted(x for run in runs for x in run)
    assert all(f.closed for f in files)


def test_one_run_and_no_runs():
    assert list(merged_lists([])) == []
    assert list(merged_lists([[[], []], []])) == []
    assert list(merged_lists([[[1, 2], [], [3]]])) == [[1, 2], [3]]
