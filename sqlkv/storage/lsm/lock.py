"""The LOCK file: one writing process at a time per database directory, any number of readers.

A writer takes an exclusive ``flock`` on ``<dir>/LOCK`` without blocking, so a second writer
gets `DatabaseLockedError` at once. The lock dies with the process, so a crash never leaves a
stale lock behind. A read-only opener takes no lock at all, as SQLite's WAL mode lets readers
run beside the writer: it reads the MANIFEST and the WAL (files the writer only appends to or
replaces atomically) and holds its table files open, so a compaction deleting them cannot pull
them away (`LSMCore.refresh`). (Within one process the engine registry shares a single engine
instead of locking twice -- flock would conflict with itself.)
"""

from __future__ import annotations

import fcntl
import os

from sqlkv.errors import DatabaseLockedError, OperationalError

LOCK_NAME = "LOCK"


class DirectoryLock:
    def __init__(self, directory: str, shared: bool = False) -> None:
        self.path = os.path.join(directory, LOCK_NAME)
        self._fd = None
        if shared:
            return  # readers do not lock: see the module docstring
        try:
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OperationalError(f"cannot open lock file {self.path}: {exc}") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise DatabaseLockedError(f"database {directory} is locked by another process") from None

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
