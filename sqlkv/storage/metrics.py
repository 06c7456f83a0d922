"""Figures an engine keeps about itself: latency histograms and a log of recent events.

A `Histogram` counts durations (nanoseconds) in log-spaced buckets: eight per power of two,
so a reported percentile is within 12.5% of the true one, whatever the range, in a few hundred
integers. Recording is one ``bit_length``, a shift and a list increment -- cheap enough for
paths that run thousands of times a second, but a point ``get`` (a few microseconds) still
only times one call in `SAMPLE_EVERY`, so the clock reads add well under 1% there.

Increments are not locked: under the GIL a count can lose an increment when two threads
record at the same instant. The figures are for operators reading trends, and exact enough
for that; counters that tests check exactly are incremented under the engine's locks.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from itertools import repeat
from operator import add, lshift, rshift, sub
from dataclasses import dataclass, field
from typing import Any

# Time one point read in this many (a power of two: the check is ``n & (SAMPLE_EVERY - 1)``).
SAMPLE_EVERY = 16

_SUB_BITS = 3  # 2**3 = 8 buckets per power of two
_SUB = 1 << _SUB_BITS


def _bucket(value: int) -> int:
    if value < _SUB:
        return value if value > 0 else 0
    bits = value.bit_length()
    return ((bits - _SUB_BITS - 1) << _SUB_BITS) + (value >> (bits - _SUB_BITS - 1))


def _bounds(index: int) -> tuple[int, int]:
    """``[low, high)`` of the values bucket ``index`` counts."""
    if index < _SUB:
        return index, index + 1
    shift = (index >> _SUB_BITS) - 1
    mantissa = (index & (_SUB - 1)) + _SUB
    return mantissa << shift, (mantissa + 1) << shift


class Histogram:
    """Durations in nanoseconds: count, sum, max and log-bucketed counts for percentiles."""

    __slots__ = ("counts", "count", "total", "max")

    def __init__(self) -> None:
        self.counts: list[int] = [0] * 64
        self.count = 0
        self.total = 0
        self.max = 0

    def record(self, nanos: int) -> None:
        # _bucket, inlined with its constants (_SUB = 8, _SUB_BITS = 3): this runs once per
        # statement and per commit
        if nanos < 8:
            i = nanos if nanos > 0 else 0
        else:
            shift = nanos.bit_length() - 4
            i = (shift << 3) + (nanos >> shift)
        counts = self.counts
        if i >= len(counts):
            counts.extend([0] * (i + 1 - len(counts)))
        counts[i] += 1
        self.count += 1
        self.total += nanos
        if nanos > self.max:
            self.max = nanos

    def record_many(self, values: list[int]) -> None:
        """`record` of each of ``values``, bucketed by C-level maps (a statement's durations
        taken in bulk: a call per value cost more than the value's share of this)."""
        if not values:
            return
        if min(values) < 8:  # the small buckets are the values themselves: one at a time
            for nanos in values:
                self.record(nanos)
            return
        shifts = list(map(sub, map(int.bit_length, values), repeat(4)))
        buckets = map(add, map(lshift, shifts, repeat(3)), map(rshift, values, shifts))
        counts = self.counts
        for i, n in Counter(buckets).items():
            if i >= len(counts):
                counts.extend([0] * (i + 1 - len(counts)))
            counts[i] += n
        self.count += len(values)
        self.total += sum(values)
        self.max = max(self.max, max(values))

    def percentile(self, fraction: float) -> int | None:
        """The value at ``fraction`` (0.5 = median) of the recorded ones, None when empty.

        Reported as the middle of its bucket, never above the largest value recorded.
        """
        if not self.count:
            return None
        rank = max(1, -(-int(fraction * self.count * 1_000_000) // 1_000_000))  # ceil, no float drift
        seen = 0
        for i, n in enumerate(self.counts):
            seen += n
            if seen >= rank:
                low, high = _bounds(i)
                return min(self.max, (low + high - 1) // 2)
        return self.max

    def summary(self) -> dict[str, Any]:
        """count, mean/p50/p90/p99/max in milliseconds (None when nothing was recorded)."""
        def ms(nanos: int | None) -> float | None:
            return None if nanos is None else round(nanos / 1e6, 6)

        return {
            "count": self.count,
            "mean_ms": ms(self.total // self.count) if self.count else None,
            "p50_ms": ms(self.percentile(0.50)),
            "p90_ms": ms(self.percentile(0.90)),
            "p99_ms": ms(self.percentile(0.99)),
            "max_ms": ms(self.max) if self.count else None,
        }


@dataclass
class Latencies:
    """The histograms of one engine (or transaction manager), by operation name, and since when."""

    names: tuple[str, ...]
    since: float = field(default_factory=time.time)
    by_name: dict[str, Histogram] = field(init=False)

    def __post_init__(self) -> None:
        self.by_name = {name: Histogram() for name in self.names}

    def __getitem__(self, name: str) -> Histogram:
        return self.by_name[name]


class EventLog:
    """The last ``size`` events (dicts), oldest first; appends are atomic under the GIL."""

    def __init__(self, size: int = 64) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=size)

    def add(self, event: dict[str, Any]) -> None:
        self._events.append(event)

    def recent(self) -> list[dict[str, Any]]:
        return list(self._events)


__all__ = ["Histogram", "Latencies", "EventLog", "SAMPLE_EVERY"]
