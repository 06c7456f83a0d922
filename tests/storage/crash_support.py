"""Leaving a database as a crash would: files as written, but no clean close recorded."""

from __future__ import annotations

from sqlkv.storage.lsm.manifest import read_manifest, write_manifest


def as_if_crashed(path: str) -> None:
    """Forget the clean close of the database at ``path`` (a clean close seals the newest WAL
    segment; after a crash its tail may be torn and recovery must drop that tail)."""
    state = read_manifest(path)
    assert state is not None and state.sealed is not None
    state.sealed = None
    write_manifest(path, state)
