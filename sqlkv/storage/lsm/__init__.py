"""sqlkv's LSM storage engine: WAL + memtable + leveled SSTables, one directory per database.

Layout of the package (bottom up): ``wal`` (log records, group commit), ``memtable``,
``rangedel`` (range tombstones), ``sstable`` (block, bloom, builder, reader), ``cache`` (LRU
blocks), ``manifest`` (versions, MANIFEST file), ``iterators`` (scan merge), ``compaction``
(picker, runner), ``background`` (flush/compaction threads), ``lock``, ``core`` (the store) and
``engine`` (the `Engine` handle and `open_lsm`). The on-disk formats are specified in
grammar-notes/storage.md.
"""

from sqlkv.storage.lsm.engine import LSMEngine, LSMSnapshot, open_lsm

__all__ = ["LSMEngine", "LSMSnapshot", "open_lsm"]
