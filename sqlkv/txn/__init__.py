"""Transactions: SERIALIZABLE optimistic concurrency control over the KV interface.

``BEGIN; SELECT ...; UPDATE ...; COMMIT`` maps onto this layer as::

    manager = TxnManager.for_engine(engine)      # one per engine
    txn = manager.begin()                        # snapshot at seq N
    txn.get(key) / txn.scan(start, end)          # snapshot + own writes; reads recorded
    txn.put(key, value)                          # buffered, invisible to others
    txn.commit()                                 # validate reads vs commits after N, then
                                                 # one WriteBatch; else SerializationFailure

Modules: `buffer` (write buffer, savepoint undo log), `merge` (read-your-writes scans),
`spans` (read/write key spans and their intersection), `transaction`, `manager` (commit lock,
conflict log). grammar-notes/transactions.md states the isolation model and its limits.
"""

from sqlkv.txn.buffer import DEFAULT_MAX_TXN_BYTES
from sqlkv.txn.manager import DEFAULT_MAX_LOG_KEYS, TxnManager
from sqlkv.txn.transaction import Transaction

__all__ = ["TxnManager", "Transaction", "DEFAULT_MAX_TXN_BYTES", "DEFAULT_MAX_LOG_KEYS"]
