"""Whether an inverted scan reads its spans or the whole table (`choose_reading`).

sqlkv keeps no table statistics, so the planner cannot know at plan time how many rows
``tags @> ARRAY['common']`` matches, and the operand is often a parameter. The choice is made
each time the scan runs, from a bounded probe of the data it is about to read:

1. Count the entries under each group's spans, stopping at `PROBE_CAP` per group. The rows the
   index would fetch are at most the smallest group's count (``candidates``).
2. Fewer than `MIN_CANDIDATES` candidates: read through the index (a few point fetches cost
   less than scanning any table worth indexing, and nothing more is counted).
3. Otherwise count the table's primary-index keys, stopping at `FULL_SCAN_SHARE` x candidates
   (times the number of column families, each a key per row). When the table has no more rows
   than that, the candidates are at least 1/`FULL_SCAN_SHARE` of it -- fetching each by primary
   key costs about as much as reading the whole table in order (the planner's own weights: a
   fetched row 3, a scanned row 1) -- so the scan reads the whole table instead.

Either reading returns a superset of the matching rows and the filters are checked again on
them, so the choice changes cost only, never results: a cached plan stays right whatever the
data or the parameters. The probe reads at most `PROBE_CAP` keys per group plus
`FULL_SCAN_SHARE` x `PROBE_CAP` x families primary keys; when the smallest group reaches the cap
the candidates' share is unknown past that bound, and a table bigger than it is read through the
index (possibly the slower choice for a probe matching most of a very big table).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlkv.storage.kv import prefix_end

PROBE_CAP = 2048
MIN_CANDIDATES = 64
FULL_SCAN_SHARE = 3


@dataclass(frozen=True)
class ReadingChoice:
    full_scan: bool
    candidates: int  # the smallest group's entry count, capped at PROBE_CAP
    table_rows: int | None  # rows counted up to the bound; None when not counted
    bound: int  # the most rows counted

    def explained(self) -> str:
        """Why, for EXPLAIN: ``the spans hold 6 entries`` (the smallest group's count)."""
        held = f"the spans hold {self.candidates}{'+' if self.candidates >= PROBE_CAP else ''} entries"
        if self.table_rows is None:
            return held
        if self.full_scan:
            return f"reads the whole table instead: {held}, the table {self.table_rows} rows"
        return f"{held}, the table more than {self.bound} rows"


def count_entries(reader, spans: list[tuple[bytes, bytes]], cap: int) -> int:
    """The number of keys in ``spans``, counting no further than ``cap``."""
    n = 0
    for start, end in spans:
        if n >= cap:
            break
        n += sum(1 for _ in reader.scan(start, end, False, cap - n))
    return n


def choose_reading(reader, groups: list[list[tuple[bytes, bytes]]], table_prefix: bytes,
                   families: int) -> ReadingChoice:
    """The rule of the module docstring for one execution's spans (``groups``: CNF, non-empty)."""
    candidates = min(count_entries(reader, group, PROBE_CAP) for group in groups)
    if candidates < MIN_CANDIDATES:
        return ReadingChoice(False, candidates, None, 0)
    bound = FULL_SCAN_SHARE * candidates
    keys = count_entries(reader, [(table_prefix, prefix_end(table_prefix))], bound * families + 1)
    rows = -(-keys // families)  # a row has one key per family at most, one at least
    return ReadingChoice(keys <= bound * families, candidates, rows, bound)
