"""SSTables: immutable sorted files of versioned entries (see grammar-notes/storage.md).

`TableBuilder` writes one from entries given in (key ascending, seq descending) order;
`TableReader` answers point lookups and yields blocks for scans, through the shared block cache.
"""

from sqlkv.storage.lsm.sstable.builder import TableBuilder, TableInfo
from sqlkv.storage.lsm.sstable.reader import TableReader

__all__ = ["TableBuilder", "TableInfo", "TableReader"]
