"""Reading KV for an operator, counted for EXPLAIN ANALYZE.

`reader_for(ctx, op)` is what every leaf operator reads through: the transaction itself, or,
when the statement runs under EXPLAIN ANALYZE, a `_CountingReader` that forwards each call to
the transaction and adds the KV pairs it returned to the operator's `OperatorStats` (gets,
scans, short prefix reads and batched gets alike), so the counts EXPLAIN ANALYZE prints are
the reads the operator really made.
"""

from __future__ import annotations

from sqlkv.sql.context import ExecContext, OperatorStats
from sqlkv.sql.exec.operator import Operator


class _Counter:
    """Counts KV reads into an OperatorStats (or nothing when not analysing)."""

    def __init__(self, st: OperatorStats | None) -> None:
        self.st = st

    def scan_batches(self, txn, start: bytes, end: bytes | None, reverse: bool, limit: int | None, sizes):
        st = self.st
        batches = txn.scan_batches(start, end, reverse, limit, sizes)
        if st is None:
            return batches
        st.kv_scans += 1
        return self._counted_batches(batches)

    def _counted_batches(self, batches):
        st = self.st
        for batch in batches:
            st.kv_keys_read += len(batch)
            yield batch

    def scan_columns(self, txn, start: bytes, end: bytes | None, size: int):
        st = self.st
        lists = txn.scan_columns(start, end, size)
        if st is None:
            return lists
        st.kv_scans += 1
        return self._counted_columns(lists)

    def _counted_columns(self, lists):
        st = self.st
        for keys, values in lists:
            st.kv_keys_read += len(keys)
            yield keys, values

    def scan(self, txn, start: bytes, end: bytes | None, reverse: bool, limit: int | None):
        st = self.st
        if st is None:
            return txn.scan(start, end, reverse=reverse, limit=limit)
        st.kv_scans += 1
        return self._counted(txn.scan(start, end, reverse=reverse, limit=limit))

    def _counted(self, it):
        st = self.st
        for kv in it:
            st.kv_keys_read += 1
            yield kv

    def get(self, txn, key: bytes):
        value = txn.get(key)
        if self.st is not None:
            self.st.kv_gets += 1
            if value is not None:
                self.st.kv_keys_read += 1
        return value

    def read_range(self, txn, start: bytes, end: bytes | None, reverse: bool = False, limit: int | None = None):
        pairs = txn.read_range(start, end, reverse, limit)
        if self.st is not None:
            self.st.kv_scans += 1
            self.st.kv_keys_read += len(pairs)
        return pairs

    def read_prefix(self, txn, start: bytes, end: bytes | None, most: int):
        pairs = txn.read_prefix(start, end, most)
        if self.st is not None:
            self.st.kv_scans += 1
            self.st.kv_keys_read += len(pairs) if pairs is not None else most + 1
        return pairs

    def read_prefixes(self, txn, spans: list[tuple[bytes, bytes]], most: int):
        found = txn.read_prefixes(spans, most)
        if self.st is not None:
            self.st.kv_scans += len(spans)
            self.st.kv_keys_read += sum(most + 1 if pairs is None else len(pairs) for pairs in found)
        return found

    def get_many(self, txn, keys: list[bytes]):
        values = txn.get_many(keys)
        if self.st is not None:
            self.st.kv_gets += len(keys)
            self.st.kv_keys_read += sum(1 for v in values if v is not None)
        return values


class _CountingReader:
    def __init__(self, txn, counter: _Counter) -> None:
        self.txn = txn
        self.counter = counter

    def get(self, key: bytes):
        return self.counter.get(self.txn, key)

    def get_many(self, keys: list[bytes]):
        return self.counter.get_many(self.txn, keys)

    def read_range(self, start: bytes, end: bytes | None, reverse: bool = False, limit: int | None = None):
        return self.counter.read_range(self.txn, start, end, reverse, limit)

    def read_prefix(self, start: bytes, end: bytes | None, most: int):
        return self.counter.read_prefix(self.txn, start, end, most)

    def read_prefixes(self, spans: list[tuple[bytes, bytes]], most: int):
        return self.counter.read_prefixes(self.txn, spans, most)

    def scan(self, start, end, reverse=False, limit=None):
        return self.counter.scan(self.txn, start, end, reverse, limit)

    def scan_batches(self, start, end, reverse, limit, sizes):
        return self.counter.scan_batches(self.txn, start, end, reverse, limit, sizes)

    def scan_columns(self, start, end, size):
        return self.counter.scan_columns(self.txn, start, end, size)


def reader_for(ctx: ExecContext, op: Operator):
    """The transaction, or under EXPLAIN ANALYZE a reader counting ``op``'s KV requests."""
    st = ctx.stats_for(op)
    return ctx.txn if st is None else _CountingReader(ctx.txn, _Counter(st))
