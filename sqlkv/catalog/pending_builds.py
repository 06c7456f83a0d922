"""Index builds in progress: the pending-build system table and what a crash leaves of a build.

A CREATE INDEX that backfills by SSTable ingestion (sqlkv/sql/ddl/index_ingest.py) reserves its
index id in a committed transaction of its own, which also writes the marker
``/Table/5/1/<table id>/<index id>`` (table 4 is the history timeline, storage/history.py). The
entries it ingests are invisible until the index is published in the table's descriptor, which
removes the marker. A build that fails removes its key range and its marker (`abandon`); one
killed by a crash leaves both, and the next open of the database removes them
(`collect_abandoned`). CHECK DATABASE accepts a pending build's keys (`pending_index_ids`).
"""

from __future__ import annotations

import threading
from typing import Any

from sqlkv.catalog.catalog import Catalog
from sqlkv.encoding.keys import decode_key, encode_key, index_prefix
from sqlkv.errors import CorruptionError, SerializationFailure
from sqlkv.storage.kv import prefix_end

PENDING_TABLE_ID = 5
PENDING = index_prefix(PENDING_TABLE_ID, 1)

_live_lock = threading.Lock()
_live: set[tuple[int, int, int]] = set()  # (id of the txn manager, table id, index id) being built here


def pending_key(table_id: int, index_id: int) -> bytes:
    return PENDING + encode_key([table_id, index_id])


def pending_index_ids(txn: Any, table_id: int) -> set[int]:
    """Ids of ``table_id``'s indexes being built (or abandoned by a crash, not yet collected)."""
    start = PENDING + encode_key([table_id])
    return {_decode_pending(key)[1] for key, _ in txn.scan(start, prefix_end(start))}


def _decode_pending(key: bytes) -> tuple[int, int]:
    (table_id, index_id), _end = decode_key(key, 2, offset=len(PENDING))
    return table_id, index_id  # type: ignore[return-value]


def mark_live(manager: Any, table_id: int, index_id: int) -> tuple[int, int, int]:
    """Note a build running in this process (collect_abandoned leaves it alone)."""
    live = (id(manager), table_id, index_id)
    with _live_lock:
        _live.add(live)
    return live


def unmark_live(live: tuple[int, int, int]) -> None:
    with _live_lock:
        _live.discard(live)


def abandon(manager: Any, table_id: int, index_id: int, fence: Any = None) -> None:
    """Remove an unpublished index's key range and its pending marker (best effort: what a
    failure here leaves, `collect_abandoned` removes at the next open)."""
    start = index_prefix(table_id, index_id)
    for _attempt in range(5):
        txn = manager.begin()
        if fence is not None:
            manager.pass_fence(txn, fence)
        try:
            desc = Catalog(txn).table_by_id(table_id)
            # a publication whose commit raised after applying (a failed fsync wait) keeps its entries
            if desc is None or all(i.id != index_id for i in desc.indexes):
                txn.delete_range(start, prefix_end(start))
            txn.delete(pending_key(table_id, index_id))
            txn.commit()
            return
        except SerializationFailure:
            txn.rollback()
        except Exception:  # noqa: BLE001 - the statement's own error is what the user must see
            txn.rollback()
            return


def collect_abandoned(manager: Any, read_only: bool) -> int:
    """Remove what crashed ingestion backfills left (run at open); returns how many.

    A damaged table file met on the way is left for CHECK DATABASE to report: opening the
    database must not fail on it (the rest of the data stays readable)."""
    if read_only:
        return 0
    txn = manager.begin(read_only=True)
    try:
        found = [_decode_pending(key) for key, _ in txn.scan(PENDING, prefix_end(PENDING))]
    except CorruptionError:
        return 0
    finally:
        txn.rollback()
    with _live_lock:
        found = [(t, i) for t, i in found if (id(manager), t, i) not in _live]
    for table_id, index_id in found:
        abandon(manager, table_id, index_id)
    return len(found)
