"""Key spans: what a transaction read, what a commit wrote, and whether the two intersect.

A transaction that ran ``SELECT count(*) FROM doctors WHERE on_call`` read the span of the
doctors table it scanned; one that ran ``SELECT ... WHERE id = 7`` read one key. Both are kept
here (`ReadSet`) while the transaction runs. At commit they become a `KeySpans` -- sorted
distinct point keys plus `Intervals`, sorted disjoint half-open ``[start, end)`` byte ranges
(a partly consumed scan ends just after its last key, ``last + b"\\0"``) -- and are tested
against the `KeySpans` written by every transaction that committed after this one's snapshot.
Any intersection means the transaction read something a concurrent commit changed, so it
cannot be serialised after it: it must restart.

Each intersection test (points/points, points/ranges, ranges/ranges) walks the smaller side
and binary-searches the larger, so a transaction with 200k reads checked against a commit of
three keys costs a few binary searches, and the reverse case costs the same.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
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
    spans: list[tuple[bytes, bytes | None]] = field(default_factory=list)  # ranges read whole

    def add_point(self, key: bytes) -> None:
        self.points.append(key)

    def add_points(self, keys: list[bytes]) -> None:
        self.points.extend(keys)

    def open_scan(self, start: bytes, end: bytes | None, reverse: bool) -> ScanRead:
        scan = ScanRead(start, end, reverse)
        self.scans.append(scan)
        return scan

    def add_span(self, start: bytes, end: bytes | None) -> None:
        """A range read whole at once (a prefix read): ``[start, end)`` is depended on."""
        self.spans.append((start, end))

    def __len__(self) -> int:
        return len(self.points) + len(self.scans) + len(self.spans)

    def key_spans(self) -> KeySpans:
        spans = [span for span in (scan.span() for scan in self.scans) if span is not None]
        return KeySpans(sorted(set(self.points)), Intervals.from_spans(spans + self.spans))


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

    def first_point_in(self, points: list[bytes]) -> bytes | None:
        """A key of the sorted list ``points`` lying in these intervals, or None."""
        if not points or not self.starts:
            return None
        if len(points) <= len(self.starts):
            for point in points:
                i = bisect_right(self.starts, point)
                if i and _end_lt(point, self.ends[i - 1]):
                    return point
            return None
        for start, end in zip(self.starts, self.ends):
            j = bisect_left(points, start)
            if j < len(points) and (end is None or points[j] < end):
                return points[j]
        return None


def _first_common(a: list[bytes], b: list[bytes]) -> bytes | None:
    """A key in both sorted lists, or None."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    for key in small:
        i = bisect_left(large, key)
        if i < len(large) and large[i] == key:
            return key
    return None


@dataclass
class KeySpans:
    """A set of keys: sorted distinct point keys plus disjoint ranges.

    Point keys stay bare bytes (no ``[k, k + b"\0")`` pair built per key), so turning a
    200k-key write buffer into its write set costs one list copy.
    """

    points: list[bytes]
    ranges: Intervals

    @classmethod
    def everything(cls) -> KeySpans:
        return cls([], Intervals.everything())

    def __len__(self) -> int:
        return len(self.points) + len(self.ranges)

    def first_overlap(self, other: KeySpans) -> bytes | None:
        """A key in both sets, or None when they are disjoint."""
        for found in (
            _first_common(self.points, other.points),
            other.ranges.first_point_in(self.points),
            self.ranges.first_point_in(other.points),
            self.ranges.first_overlap(other.ranges),
        ):
            if found is not None:
                return found
        return None
