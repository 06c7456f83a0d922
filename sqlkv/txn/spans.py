"""Key spans: what a transaction read, what a commit wrote, and whether the two intersect.

A transaction that ran ``SELECT count(*) FROM doctors WHERE on_call`` read the span of the
doctors table it scanned; one that ran ``SELECT ... WHERE id = 7`` read one key. Both are kept
here (`ReadSet`) while the transaction runs. At commit they become an `Intervals` -- sorted,
disjoint, half-open ``[start, end)`` byte ranges, a point key ``k`` being ``[k, k + b"\\0")`` --
and are tested against the `Intervals` of every transaction that committed after this one's
snapshot. Any intersection means the transaction read something a concurrent commit changed,
so it cannot be serialised after it: it must restart.

The intersection test walks the smaller of the two interval lists and binary-searches the
larger, so a transaction with 200k reads checked against a commit of three keys costs three
binary searches, and the reverse case costs the same.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field


def key_after(key: bytes) -> bytes:
    """The smallest key greater than ``key``: the exclusive end of the point span ``key``."""
    return key + b"\x00"


@dataclass
class ScanRead:
    """One scan's progress. The span read is what the consumer actually pulled from it."""

    start: bytes
    end: bytes | None
    reverse: bool
    last: bytes | None = None  # the last key yielded to the consumer
    exhausted: bool = False  # the scan ran to the end of its range (not stopped by a limit)

    def span(self) -> tuple[bytes, bytes | None] | None:
        """``[start, end)`` actually depended on; None when nothing was pulled."""
        if self.exhausted:
            return self.start, self.end
        if self.last is None:
            return None
        if self.reverse:
            return self.last, self.end
        return self.start, key_after(self.last)


@dataclass
class ReadSet:
    """Everything a read-write transaction has read from its snapshot so far."""

    points: list[bytes] = field(default_factory=list)
    scans: list[ScanRead] = field(default_factory=list)

    def add_point(self, key: bytes) -> None:
        self.points.append(key)

    def open_scan(self, start: bytes, end: bytes | None, reverse: bool) -> ScanRead:
        scan = ScanRead(start, end, reverse)
        self.scans.append(scan)
        return scan

    def __len__(self) -> int:
        return len(self.points) + len(self.scans)

    def intervals(self) -> Intervals:
        spans: list[tuple[bytes, bytes | None]] = [(k, key_after(k)) for k in self.points]
        for scan in self.scans:
            span = scan.span()
            if span is not None:
                spans.append(span)
        return Intervals.from_spans(spans)


def _end_lt(a: bytes | None, b: bytes | None) -> bool:
    """``a < b`` for interval ends, None meaning +infinity."""
    if a is None:
        return False
    return b is None or a < b


@dataclass
class Intervals:
    """Sorted, disjoint, half-open key intervals; an end of None is unbounded."""

    starts: list[bytes]
    ends: list[bytes | None]

    @classmethod
    def from_spans(cls, spans: Iterable[tuple[bytes, bytes | None]]) -> Intervals:
        """Sort and coalesce overlapping or touching spans (empty spans are dropped)."""
        starts: list[bytes] = []
        ends: list[bytes | None] = []
        for start, end in sorted(spans, key=lambda span: span[0]):
            if end is not None and end <= start:
                continue
            if ends and not _end_lt(ends[-1], start):  # overlaps or touches the previous one
                if _end_lt(ends[-1], end):
                    ends[-1] = end
                continue
            starts.append(start)
            ends.append(end)
        return cls(starts, ends)

    @classmethod
    def everything(cls) -> Intervals:
        return cls([b""], [None])

    def __len__(self) -> int:
        return len(self.starts)

    def first_overlap(self, other: Intervals) -> bytes | None:
        """A key lying in both sets of intervals, or None when they are disjoint."""
        small, large = (self, other) if len(self) <= len(other) else (other, self)
        for start, end in zip(small.starts, small.ends):
            # The interval of ``large`` with the greatest start below ``end`` also has the
            # greatest end among those (they are disjoint and sorted): only it can reach ``start``.
            i = len(large.starts) if end is None else bisect_left(large.starts, end)
            if i == 0:
                continue
            if _end_lt(start, large.ends[i - 1]):
                return max(start, large.starts[i - 1])
        return None
