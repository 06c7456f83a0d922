"""Every byte the LSM writes goes through these few calls, so faults can be injected.

SQLite tests its recovery by running each operation under a VFS that fails the Nth write,
sync or rename; this is that seam, reduced to what the LSM needs. Production code calls
`write_all`, `sync`, `truncate`, `replace` and friends; a test installs a `FaultPlan` with
`inject_faults` and the plan decides, call by call, whether the real system call runs, runs
short, or fails with the errno the plan names (ENOSPC for a full disk, EIO for a bad device).

Operations are named ``open``, ``write``, ``sync``, ``truncate``, ``replace`` and ``syncdir``;
a plan can restrict itself to files whose name ends with a suffix (``.log``, ``.sst``,
``MANIFEST``), so a test can fail "the third WAL write" precisely.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_paths: dict[int, str] = {}  # fd -> path, for plans that filter by file kind
_plans: list[FaultPlan] = []
_plan_lock = threading.Lock()


@dataclass
class FaultPlan:
    """Fail the ``nth`` matching call (1-based) of operation ``op`` and, if ``sticky``, every
    later one too (a disk that stays full). ``short`` makes a write put down only that many
    bytes before failing, as a full disk does mid-record."""

    op: str
    nth: int = 1
    suffix: str = ""
    errno: int = errno.ENOSPC
    short: int | None = None
    sticky: bool = False
    seen: int = 0
    fired: int = 0
    log: list[str] = field(default_factory=list)

    def decide(self, op: str, path: str) -> bool:
        """Whether this call fails (counts the call when it matches)."""
        if op != self.op or not path.endswith(self.suffix):
            return False
        self.seen += 1
        fail = self.seen == self.nth or (self.sticky and self.seen > self.nth)
        if fail:
            self.fired += 1
            self.log.append(f"{op} {os.path.basename(path)} #{self.seen}")
        return fail


@contextmanager
def inject_faults(*plans: FaultPlan) -> Iterator[FaultPlan]:
    """Run the block with ``plans`` deciding which file operations fail (tests only); yields
    the first plan."""
    with _plan_lock:
        _plans[:] = plans
    try:
        yield plans[0]
    finally:
        with _plan_lock:
            _plans.clear()


def _fault(op: str, path: str) -> FaultPlan | None:
    if not _plans:
        return None
    with _plan_lock:
        for plan in _plans:
            if plan.decide(op, path):
                return plan
    return None


def _raise(plan: FaultPlan, path: str) -> None:
    raise OSError(plan.errno, os.strerror(plan.errno), path)


def open_file(path: str, append: bool = False) -> int:
    """Open ``path`` for writing (created if missing; truncated unless ``append``)."""
    plan = _fault("open", path)
    if plan is not None:
        _raise(plan, path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    _paths[fd] = path
    return fd


def close(fd: int) -> None:
    _paths.pop(fd, None)
    os.close(fd)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``data`` (looping over short writes) or raise OSError."""
    path = _paths.get(fd, "")
    plan = _fault("write", path)
    view = memoryview(data)
    if plan is not None:
        if plan.short:
            os.write(fd, view[: min(plan.short, len(view))])
        _raise(plan, path)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def sync(fd: int, data_only: bool = True) -> None:
    """fdatasync (or fsync) ``fd``."""
    path = _paths.get(fd, "")
    plan = _fault("sync", path)
    if plan is not None:
        _raise(plan, path)
    if data_only:
        os.fdatasync(fd)
    else:
        os.fsync(fd)


def truncate(fd: int, size: int) -> None:
    path = _paths.get(fd, "")
    plan = _fault("truncate", path)
    if plan is not None:
        _raise(plan, path)
    os.ftruncate(fd, size)


def replace(src: str, dst: str) -> None:
    plan = _fault("replace", dst)
    if plan is not None:
        _raise(plan, dst)
    os.replace(src, dst)


def sync_dir(directory: str) -> None:
    """fsync a directory, so a created, renamed or deleted entry in it is durable."""
    plan = _fault("syncdir", directory)
    if plan is not None:
        _raise(plan, directory)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_durably(path: str, data: bytes) -> None:
    """Write ``data`` as the whole of ``path`` and fsync it."""
    fd = open_file(path)
    try:
        write_all(fd, data)
        sync(fd, data_only=False)
    finally:
        close(fd)


def faults_active() -> bool:
    """Whether a test's plan is installed (it sees only this process: table builds then stay
    in it, see worker.py)."""
    return bool(_plans)
