"""Shared helpers for the storage tests: small-sized LSM options so flushes and compactions
happen after a few kilobytes, and a dict model of the KV semantics."""

from __future__ import annotations

import os

import pytest

SMALL = dict(memtable_size=4096, block_size=256, target_file_size=4096, level_base_bytes=16384,
             l0_trigger=2, cache_size=1 << 16)


def model_scan(model: dict, start: bytes, end: bytes | None, reverse: bool, limit: int | None):
    keys = sorted(k for k in model if k >= start and (end is None or k < end))
    if reverse:
        keys.reverse()
    if limit is not None:
        keys = keys[:max(0, limit)]
    return [(k, model[k]) for k in keys]


def apply_ops(model: dict, ops: list) -> None:
    for op in ops:
        if op[0] == "put":
            model[op[1]] = op[2]
        elif op[0] == "delete":
            model.pop(op[1], None)
        else:
            for k in [k for k in model if op[1] <= k < op[2]]:
                del model[k]


def to_batch(ops: list):
    """The model's ops ``("put", k, v)``, ``("delete", k)``, ``("range", start, end)`` as a batch."""
    from sqlkv.storage.kv import WriteBatch

    batch = WriteBatch()
    for op in ops:
        if op[0] == "put":
            batch.put(op[1], op[2])
        elif op[0] == "delete":
            batch.delete(op[1])
        else:
            batch.delete_range(op[1], op[2])
    return batch


@pytest.fixture
def small_options() -> dict:
    return dict(SMALL)
