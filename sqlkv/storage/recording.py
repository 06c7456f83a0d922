"""`RecordingEngine`: an engine that hands every call to another and keeps the write batches.

``Database(":memory:", RecordingEngine(MemoryEngine()), None)`` runs SQL as usual; after
``INSERT INTO users VALUES (10, 'ann')`` commits, ``engine.batches[-1].ops`` holds exactly the
puts the statement's transaction applied, in order, with the conditions it checked. The golden
tests print these batches to pin down the KV operations of each statement; anyone can use it
to watch what a workload writes. Only batches the inner engine accepted are kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlkv.storage.kv import Engine, Snapshot, WriteBatch
from sqlkv.storage.metrics import Latencies


class RecordingEngine(Engine):
    """Delegates to ``inner``; appends each applied `WriteBatch` to ``batches``."""

    def __init__(self, inner: Engine) -> None:
        self.inner = inner
        self.batches: list[WriteBatch] = []

    def write(self, batch: WriteBatch) -> int:
        seq = self.inner.write(batch)
        self.batches.append(batch)
        return seq

    def write_nowait(self, batch: WriteBatch) -> int:
        seq = self.inner.write_nowait(batch)
        self.batches.append(batch)
        return seq

    def wait_durable(self, seq: int) -> None:
        self.inner.wait_durable(seq)

    def get(self, key: bytes) -> bytes | None:
        return self.inner.get(key)

    def scan(self, start: bytes, end: bytes | None, reverse: bool = False,
             limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        return self.inner.scan(start, end, reverse=reverse, limit=limit)

    def snapshot(self) -> Snapshot:
        return self.inner.snapshot()

    @property
    def last_seq(self) -> int:
        return self.inner.last_seq

    @property
    def read_only(self) -> bool:
        return self.inner.read_only

    def close(self) -> None:
        self.inner.close()

    def stats(self) -> dict[str, Any]:
        return self.inner.stats()

    def latencies(self) -> Latencies | None:
        return self.inner.latencies()

    def recent_compactions(self) -> list[dict[str, Any]]:
        return self.inner.recent_compactions()

    def approximate_sizes(self, spans: list[tuple[bytes, bytes | None]]) -> list[tuple[int, int]]:
        return self.inner.approximate_sizes(spans)

    def flush(self) -> None:
        self.inner.flush()

    def verify(self) -> list[str]:
        return self.inner.verify()

    def compact(self) -> None:
        self.inner.compact()

    def finish_background_work(self) -> None:
        self.inner.finish_background_work()
