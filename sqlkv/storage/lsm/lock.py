"""The LOCK file: one process at a time per database directory.

A writer takes an exclusive ``flock`` on ``<dir>/LOCK``, a read-only opener a shared one; both
without blocking, so a second process gets `DatabaseLockedError` at once. The lock dies with the
process, so a crash never leaves a stale lock behind. (Within one process the engine registry
shares a single engine instead of locking twice -- flock would conflict with itself.)
"""

from __future__ import annotations

import fcntl
import os

from sqlkv.errors import DatabaseLockedError, OperationalError

LOCK_NAME = "LOCK"


class DirectoryLock:
    def __init__(self, directory: str, shared: bool = False) -> None:
        self.path = os.path.join(directory, LOCK_NAME)
        flags = os.O_RDONLY if shared else os.O_RDWR | os.O_CREAT
        try:
            self._fd: int | None = os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            self._fd = os.open(directory, os.O_RDONLY)  # read-only open of a lock-less directory
        except OSError as exc:
            raise OperationalError(f"cannot open lock file {self.path}: {exc}") from None
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
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
