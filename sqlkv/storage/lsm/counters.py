"""The LSM's cumulative counters across restarts: what the MANIFEST carries, and bloom totals.

Every MANIFEST write (flush, compaction, clean close) stores `to_save`; an open hands the last
one to `restore`. ``since`` says when counting began: the database's creation, or the first
open by a version that kept counters. Per-process figures (block cache, aborted work,
latencies) are not here: they restart at open, and the tables reading them say so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlkv.storage.lsm.core import LSMCore

# Counters that describe the database over its life, so they persist.
PERSISTED_COUNTERS = ("user_bytes", "flush_bytes", "compaction_bytes", "gets", "tables_probed",
                      "flushes", "compactions", "write_stalls", "write_stall_seconds", "write_stops", "write_stop_seconds",
                      "versions_dropped", "files_dropped_by_tombstone")
_BLOOM = ("bloom_useful", "bloom_positives", "bloom_false_positives")


def restore(core: LSMCore, saved: dict[str, float]) -> None:
    """Continue the counts the MANIFEST carried over from earlier opens."""
    if "since" not in saved:
        return  # a new database, or one written before counters were kept: count from now
    core.since = float(saved["since"])
    for name in PERSISTED_COUNTERS:
        if name in saved:
            core.stats_counters[name] = saved[name]
    core.retired_bloom = [int(saved.get(name, 0)) for name in _BLOOM]


def bloom_totals(core: LSMCore) -> list[int]:
    """Bloom filter useful / positive / false positive counts, over every table ever read:
    the open readers' own counts plus those of readers retired with their files."""
    totals = list(core.retired_bloom)
    for reader in list(core.readers.values()):
        totals[0] += reader.bloom_negatives
        totals[1] += reader.bloom_positives
        totals[2] += reader.bloom_false_positives
    return totals


def to_save(core: LSMCore) -> dict[str, float]:
    saved: dict[str, float] = {name: core.stats_counters[name] for name in PERSISTED_COUNTERS}
    saved.update(zip(_BLOOM, bloom_totals(core)))
    saved["since"] = core.since
    return saved
