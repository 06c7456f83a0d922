"""Span arithmetic against brute force: normalising spans and intersecting key sets.

Keys are drawn from a 3-letter alphabet up to 3 bytes long; every key up to 4 bytes is used as
a probe, which is enough to find a common key whenever two such sets intersect (``a + b"\\0"``
sits between ``a`` and its successors).
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlkv.txn.spans import Intervals, KeySpans, ScanRead

SPAN_KEYS = st.lists(st.sampled_from([0, 1, 2]), max_size=3).map(bytes)
SPANS = st.lists(st.tuples(SPAN_KEYS, st.none() | SPAN_KEYS), max_size=6)
PROBES = [bytes(p) for n in range(5) for p in itertools.product([0, 1, 2], repeat=n)]


def _covers(spans, key: bytes) -> bool:
    return any(start <= key and (end is None or key < end) for start, end in spans)


@settings(max_examples=300, deadline=None)
@given(a=SPANS, b=SPANS)
def test_interval_overlap_matches_brute_force(a, b) -> None:
    ia, ib = Intervals.from_spans(a), Intervals.from_spans(b)
    for iv, spans in ((ia, a), (ib, b)):  # normalised: same keys covered, sorted, disjoint
        pairs = list(zip(iv.starts, iv.ends))
        assert all(_covers(pairs, k) == _covers(spans, k) for k in PROBES)
        assert all(e1 is not None and e1 < s2 for (_, e1), (s2, _) in zip(pairs, pairs[1:]))
    # Probes of up to 4 bytes over {0,1,2} find a shared key whenever spans over up-to-3-byte
    # keys intersect (a + b"\0" sits between a and its successors).
    shared = [k for k in PROBES if _covers(a, k) and _covers(b, k)]
    witness = ia.first_overlap(ib)
    assert (witness is not None) == bool(shared)
    if witness is not None:
        assert _covers(a, witness) and _covers(b, witness)


def _in_key_set(points, spans, key: bytes) -> bool:
    return key in points or _covers(spans, key)


@settings(max_examples=300, deadline=None)
@given(pa=st.sets(SPAN_KEYS, max_size=4), a=SPANS, pb=st.sets(SPAN_KEYS, max_size=4), b=SPANS)
def test_key_spans_overlap_matches_brute_force(pa, a, pb, b) -> None:
    sa = KeySpans(sorted(pa), Intervals.from_spans(a))
    sb = KeySpans(sorted(pb), Intervals.from_spans(b))
    shared = [k for k in PROBES if _in_key_set(pa, a, k) and _in_key_set(pb, b, k)]
    witness = sa.first_overlap(sb)
    assert (witness is not None) == bool(shared)
    if witness is not None:
        assert _in_key_set(pa, a, witness) and _in_key_set(pb, b, witness)
    assert sb.first_overlap(sa) is not None if shared else sb.first_overlap(sa) is None


def test_scan_read_spans() -> None:
    forward = ScanRead(b"a", b"m", reverse=False)
    assert forward.span() is None  # nothing pulled yet
    forward.last = b"c"
    assert forward.span() == (b"a", b"c\x00")
    forward.exhausted = True
    assert forward.span() == (b"a", b"m")
    backward = ScanRead(b"a", None, reverse=True, last=b"k")
    assert backward.span() == (b"k", None)
