"""The INTERVAL value: months, days and microseconds (PostgreSQL's three fields).

It sits below the SQL layer because INTERVAL columns store it: the key codec
(`sqlkv.encoding.extended`, tag 0x03) and the row-value codec (msgpack ext type 8) encode it;
the SQL layer's date arithmetic is in `sqlkv.sql.expr.dates`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

DAY_MICROS = 86_400_000_000


@dataclass(frozen=True)
class Interval:
    """A span of time: months, days and microseconds kept apart (a month has no fixed length).

    Ordered as CockroachDB orders durations: by length, a month counting 30 days and a day 24
    hours, then by months, then by days -- a total order consistent with ``==`` (which compares
    the three fields), so ``'1 month'`` sorts just after ``'30 days'`` and is not equal to it.
    """

    months: int = 0
    days: int = 0
    micros: int = 0

    def sort_key(self) -> tuple[int, int, int]:
        return ((self.months * 30 + self.days) * DAY_MICROS + self.micros, self.months, self.days)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Interval):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Interval):
            return NotImplemented
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Interval):
            return NotImplemented
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Interval):
            return NotImplemented
        return self.sort_key() >= other.sort_key()

    def plus(self, other: Interval) -> Interval:
        return Interval(self.months + other.months, self.days + other.days, self.micros + other.micros)

    def negated(self) -> Interval:
        return Interval(-self.months, -self.days, -self.micros)

    def __neg__(self) -> Interval:
        return self.negated()

    @staticmethod
    def from_timedelta(td: dt.timedelta) -> Interval:
        return Interval(0, td.days, td.seconds * 1_000_000 + td.microseconds)

    def __str__(self) -> str:
        parts = []
        years, months = divmod(self.months, 12) if self.months >= 0 else (0, self.months)
        if years:
            parts.append(f"{years} year{'s' if years != 1 else ''}")
        if months:
            parts.append(f"{months} mon{'s' if abs(months) != 1 else ''}")
        if self.days:
            parts.append(f"{self.days} day{'s' if abs(self.days) != 1 else ''}")
        if self.micros or not parts:
            sign = "-" if self.micros < 0 else ""
            secs, us = divmod(abs(self.micros), 1_000_000)
            h, rem = divmod(secs, 3600)
            m, s = divmod(rem, 60)
            parts.append(f"{sign}{h:02d}:{m:02d}:{s:02d}" + (f".{us:06d}" if us else ""))
        return " ".join(parts)
