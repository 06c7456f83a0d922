"""Comparing the engines' answers and printing the results table.

Answers are compared after normalising values the drivers legitimately spell differently: a
whole-number float or Decimal (DuckDB's SUM, an AVG of 5.0) becomes an int, other floats are
rounded to 9 significant digits (sums in a different order differ in the last bits), and the
rows of an operation without ORDER BY are sorted. Anything else that differs is a mismatch,
reported with the first differing operation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlkv.bench.sql_engines import BenchEngine


def normalize_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (float, Decimal)):
        number = float(value)
        if number.is_integer() and abs(number) < 2**53:
            return int(number)
        return float(f"{number:.9g}")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def _row_sort_key(row: tuple) -> tuple:
    # NULLs sort last and values of different types never compare with each other.
    return tuple((v is None, type(v).__name__, v if v is not None else 0) for v in row)


def normalize_answer(answer: Any, unordered_rows: bool) -> Any:
    """One operation's answer (a list of rows, or a rowcount) in comparable form."""
    if not isinstance(answer, list):
        return answer
    rows = [tuple(normalize_value(v) for v in row) for row in answer]
    if unordered_rows:
        rows.sort(key=_row_sort_key)
    return rows


# An answer an engine cannot give (DuckDB's cursor.rowcount is always -1): agrees with anything.
UNKNOWN = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()


def first_difference(expected: list[Any], actual: list[Any]) -> str | None:
    """None when the two answer lists agree, else a description of the first difference."""
    for index, (want, got) in enumerate(zip(expected, actual)):
        if want is UNKNOWN or got is UNKNOWN:
            continue
        if want != got:
            return f"operation #{index}: expected {_clip(want)}, got {_clip(got)}"
    if len(expected) != len(actual):
        return f"{len(expected)} answers expected, got {len(actual)}"
    return None


def _clip(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class WorkloadOutcome:
    """What one workload did on every engine."""

    number: int
    title: str
    operations: str  # e.g. "10,000 selects"
    seconds: dict[str, float] = field(default_factory=dict)  # engine -> best time
    errors: dict[str, str] = field(default_factory=dict)  # engine -> error text
    mismatches: list[str] = field(default_factory=list)
    profiled: bool = False

    def ratio(self, engine: str, baseline: str) -> float | None:
        mine, theirs = self.seconds.get(engine), self.seconds.get(baseline)
        if mine is None or not theirs:
            return None
        return mine / theirs

    @property
    def verdict(self) -> str:
        if self.errors:
            return "ERROR"
        if self.mismatches:
            return "MISMATCH"
        return "profiled" if self.profiled else "ok"


def ratio_columns(engines: list[str]) -> list[tuple[str, str]]:
    """(engine, baseline) pairs shown as ratio columns: sqlkv against each other engine."""
    if "sqlkv" not in engines:
        return []
    return [("sqlkv", other) for other in ("sqlite3", "duckdb") if other in engines]


class ResultTable:
    """An aligned table printed one row at a time, as each workload finishes."""

    def __init__(self, engines: list[str]) -> None:
        self.engines = engines
        self.ratios = ratio_columns(engines)
        self.columns = (
            [("#", 2), ("workload", 33), ("operations", 16)]
            + [(name, 10) for name in engines]
            + [(f"{a}/{b}", 14) for a, b in self.ratios]
            + [("check", 8)]
        )

    def header(self) -> str:
        return self._line([name for name, _ in self.columns]) + "\n" + "-" * self._width()

    def row(self, outcome: WorkloadOutcome) -> str:
        cells = [str(outcome.number), outcome.title, outcome.operations]
        for engine in self.engines:
            if engine in outcome.errors:
                cells.append("error")
            else:
                cells.append(format_seconds(outcome.seconds.get(engine)))
        for engine, baseline in self.ratios:
            cells.append(format_ratio(outcome.ratio(engine, baseline)))
        cells.append(outcome.verdict)
        return self._line(cells)

    def _line(self, cells: list[str]) -> str:
        parts = []
        for (name, width), cell in zip(self.columns, cells):
            left_aligned = name in ("workload", "check")
            parts.append(cell.ljust(width) if left_aligned else cell.rjust(width))
        return "  ".join(parts).rstrip()

    def _width(self) -> int:
        return sum(width for _, width in self.columns) + 2 * (len(self.columns) - 1)


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.01:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds * 1000:.2f} ms"


def format_ratio(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def geometric_mean(values: list[float]) -> float | None:
    positive = [v for v in values if v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))


def summary_lines(outcomes: list[WorkloadOutcome], engines: list[str]) -> list[str]:
    """The geometric means of the sqlkv ratios over workloads every engine completed."""
    lines = []
    for engine, baseline in ratio_columns(engines):
        ratios = [
            r for o in outcomes
            if not o.errors and not o.profiled and (r := o.ratio(engine, baseline)) is not None
        ]
        mean = geometric_mean(ratios)
        if mean is not None:
            lines.append(
                f"geometric mean {engine}/{baseline}: {format_ratio(mean)} over {len(ratios)} workloads"
            )
    return lines


def engine_versions(engines: list[BenchEngine]) -> str:
    return ", ".join(engine.version() for engine in engines)
