"""Whether an inverted scan reads its spans or the whole table (`choose_reading`).

sqlkv keeps no table statistics, so the planner cannot know at plan time how many rows
``tags @> ARRAY['common']`` matches, and the operand is often a parameter. The choice is made
each time the scan runs, from a bounded probe of the data it is about to read:

1. Count the entries under each group's spans, stopping at a cap (`PROBE_START` at first). The
   rows the index would fetch are at most the smallest group's count (``candidates``).
2. Fewer than `MIN_CANDIDATES` candidates: read through the index (a few point fetches cost
   less than scanning any table worth indexing, and nothing more is counted).
3. Otherwise count the table's primary-index keys, stopping at `FULL_SCAN_SHARE` x candidates
   (times the number of column families, each a key per row). When the table has no more rows
   than that, the candidates are at least 1/`FULL_SCAN_SHARE` of it -- fetching each by primary
   key costs about as much as reading the whole table in order (the planner's own weights: a
   fetched row 3, a scanned row 1) -- so the scan reads the whole table instead.
4. When the table is bigger but the candidates reached the cap, their share is not known yet:
   the cap grows `GROWTH` times and the count starts again, up to `PROBE_MAX`; past that the
   index is read.

Either reading returns a superset of the matching rows and the filters are checked again on
them, so the choice changes cost only, never results: a cached plan stays right whatever the
data or the parameters. The counts are proportional to what the chosen reading reads anyway
(the repeated counts of step 4 add at most a third): reading through the index costs its
entries plus up to 3x as many primary keys counted; reading the whole table, at most about two
extra passes over its keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlkv.storage.kv import prefix_end

PROBE_START = 1024
PROBE_MAX = 262144
GROWTH = 4
MIN_CANDIDATES = 64
FULL_SCAN_SHARE = 3


@dataclass(frozen=True)
class ReadingChoice:
    full_scan: bool
    candidates: int  # the smallest group's entry count, up to the cap
    table_rows: int | None  # rows counted up to the bound; None when not counted
    bound: int  # the most rows counted
    capped: bool = False  # candidates stopped at PROBE_MAX: there may be more

    def explained(self) -> str:
        """Why, for EXPLAIN: ``the spans hold 6 entries`` (the smallest group's count)."""
        held = f"the spans hold {self.candidates}{'+' if self.capped else ''} entries"
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
    cap = PROBE_START
    table = [(table_prefix, prefix_end(table_prefix))]
    while True:
        candidates = min(count_entries(reader, group, cap) for group in groups)
        if candidates < MIN_CANDIDATES:
            return ReadingChoice(False, candidates, None, 0)
        bound = FULL_SCAN_SHARE * candidates
        keys = count_entries(reader, table, bound * families + 1)
        full = keys <= bound * families
        if full or candidates < cap or cap >= PROBE_MAX:
            rows = -(-keys // families)  # a row has one key per family at most, one at least
            return ReadingChoice(full, candidates, rows, bound, candidates >= PROBE_MAX)
        cap *= GROWTH
