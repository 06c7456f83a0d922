"""Building SSTables in worker processes, so flushes and compactions leave the GIL to queries.

A flush or compaction is pure-Python work -- merge, garbage-collect, encode blocks, hash keys
for the bloom -- and on a thread it holds the GIL in 5 ms slices, so a point get issued meanwhile
waits for the interpreter once per slice it needs (a SQL query needs several): right after a
bulk load, gets took 1-2 ms instead of 70 µs. Here that work runs in a worker process, on the
machine's other core. A worker is a fresh interpreter (``python -c``, not multiprocessing: that
would re-run the user's ``__main__`` in every worker, and fork the engine's locks and threads),
started on first use, talking length-prefixed pickles over its stdin and stdout.

Walking one compaction through it: the compaction thread picks the job under the store lock as
before, reserves a block of file numbers and calls `BuildPool.run` with the job (table numbers
and sizes, snapshot seqs, range tombstones: a few hundred bytes). The worker opens the input
tables itself, merges them and writes the outputs, fsynced, as ``build/<number>-<pid>.sst``.
The thread waits without the GIL, renames the outputs into the store directory, fsyncs it, and
installs them through the MANIFEST exactly as an in-thread build does. A flush ships the
memtable's entries instead, pickled in chunks of 1024 keys: pickling holds the GIL, a chunk
about a millisecond, so queries get their turn between chunks.

Failure and crash rules:

- nothing a worker writes is live until the parent installs it: a table is in the MANIFEST or
  it is garbage, removed at the next open (``build/`` is emptied when the pool starts);
- ``close()`` kills the workers; the busy ones' jobs end with `CompactionAborted` and their
  ``build/`` files are removed, as a thread's partial outputs are;
- a worker that dies otherwise: the parent removes the job's ``build/`` files and runs the job
  in its own thread; after three such losses the store stops using workers;
- a killed parent: the worker sees its parent change and stops before the next block or file,
  leaving only ``build/`` files (its pid in their names: no later worker collides with them),
  which the next open removes;
- tests that inject I/O faults (fileio.py) see only their own process: builds then stay in it.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from sqlkv.storage.lsm import fileio
from sqlkv.storage.lsm.cache import BlockCache
from sqlkv.storage.lsm.compaction import (
    Compaction,
    CompactionAborted,
    gc_entries,
    input_runs,
    merged_entries,
    table_path,
    write_tables,
)
from sqlkv.storage.lsm.memtable import entries_of
from sqlkv.storage.lsm.rangedel import RangeTombstone, TombstoneIndex
from sqlkv.storage.lsm.sstable.builder import TableInfo
from sqlkv.storage.lsm.sstable.reader import TableReader

BUILD_DIR = "build"
# the directory holding the sqlkv package (sqlkv/storage/lsm/worker.py, three levels up):
# the worker process imports sqlkv from the same place as this one
_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAX_LOSSES = 3
MIN_WORKER_BYTES = 128 << 10  # smaller jobs build in the engine's thread
PACK_CHUNK = 1024  # memtable keys per pickled chunk sent to a worker
STARTUP_WAIT = 5.0  # seconds a job waits for a new worker before building in the thread
WORKER_COMMAND = "from sqlkv.storage.lsm.worker import serve; serve()"  # tests swap in a gated one


# -- the two builds, run in a worker or (no pool, faults injected) in the engine's thread ---


def build_flush(directory: str, keys: list[bytes], data: dict, snapshots: list[int], published: int,
                tombstones: list[RangeTombstone], max_seq: int, block_size: int,
                new_number: Callable[[], int], stop: Callable[[], bool],
                path_of: Callable[[int], str] | None = None) -> tuple[list[TableInfo], int]:
    """One L0 table from a memtable's keys and map; returns it (or nothing) and versions dropped."""
    stats: dict = {}
    entries = gc_entries(entries_of(keys, data), snapshots, published, TombstoneIndex(tombstones),
                         False, stats, stop)
    infos = write_tables(entries, directory, new_number, 1 << 62, block_size, max_seq, stop, path_of)
    return infos, stats.get("dropped", 0)


def build_compaction(directory: str, job: Compaction, readers: dict[int, TableReader],
                     snapshots: list[int], published: int, tombstones: list[RangeTombstone],
                     target: int, block_size: int, checked_seq: int, new_number: Callable[[], int],
                     stop: Callable[[], bool],
                     path_of: Callable[[int], str] | None = None) -> tuple[list[TableInfo], int]:
    """The merged, garbage-collected outputs of ``job``; returns them and versions dropped."""
    stats: dict = {}
    runs = input_runs(job, readers)
    entries = gc_entries(merged_entries(runs), snapshots, published, TombstoneIndex(tombstones),
                         job.bottom, stats, stop)
    infos = write_tables(entries, directory, new_number, target, block_size, checked_seq, stop, path_of)
    return infos, stats.get("dropped", 0)


# -- the worker process's side ---------------------------------------------------------------

_FRAME = struct.Struct("<Q")
_parent_pid = 0


def _worker_stop() -> bool:
    return os.getppid() != _parent_pid  # the engine's process died: build nothing more


def _worker_paths(directory: str, numbers: list[int]) -> tuple[Callable[[], int], Callable[[int], str]]:
    """The reserved numbers handed out one by one (checking first that the engine still wants
    a file: an orphan creates none), and the ``build/`` name of each."""
    pending = iter(numbers)
    pid = os.getpid()

    def new_number() -> int:
        if _worker_stop():
            raise CompactionAborted()
        number = next(pending, None)
        if number is None:
            raise OutOfNumbers()
        return number

    return new_number, lambda number: os.path.join(directory, BUILD_DIR, f"{number:06d}-{pid}.sst")


def _with_paths(infos: tuple[list[TableInfo], int], path_of: Callable[[int], str]) -> tuple:
    tables, dropped = infos
    return [(info, path_of(info.number)) for info in tables], dropped


def flush_in_worker(directory: str, numbers: list[int], chunks: list[bytes], *args: Any) -> tuple:
    new_number, path_of = _worker_paths(directory, numbers)
    keys: list[bytes] = []
    data: dict = {}
    for chunk in chunks:
        for key, entry in pickle.loads(chunk):
            keys.append(key)
            data[key] = entry
    return _with_paths(build_flush(directory, keys, data, *args, new_number, _worker_stop, path_of),
                       path_of)


def _pack_memtable(keys: list[bytes], data: dict, *args: Any) -> tuple:
    """A flush's memtable as pickled chunks of PACK_CHUNK keys: pickling is C code that holds
    the GIL throughout, so one pickle of a 4 MB memtable would stall queries for tens of ms;
    between chunks the interpreter can switch to them."""
    chunks = []
    for start in range(0, len(keys), PACK_CHUNK):
        part = keys[start:start + PACK_CHUNK]
        chunks.append(pickle.dumps([(key, data[key]) for key in part], protocol=pickle.HIGHEST_PROTOCOL))
    return (chunks, *args)


def compact_in_worker(directory: str, numbers: list[int], job: Compaction, *args: Any) -> tuple:
    new_number, path_of = _worker_paths(directory, numbers)
    cache = BlockCache(0)  # iter_table bypasses it; readers want one all the same
    readers = {t.number: TableReader(table_path(directory, t.number), t.number, t.size, cache)
               for t in job.all_inputs}
    try:
        return _with_paths(build_compaction(directory, job, readers, *args, new_number,
                                            _worker_stop, path_of), path_of)
    finally:
        for reader in readers.values():
            reader.close()


_JOBS = {"flush": flush_in_worker, "compact": compact_in_worker}
_PACK = {"flush": _pack_memtable}  # what the engine does to a job's arguments before sending


def serve() -> None:
    """A worker's main loop: read a job, run it, answer ``(ok, result or exception)``."""
    global _parent_pid
    _parent_pid = int(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the foreground, not for us
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries answers only
    _write_frame(out, ("ready", os.getpid()))  # imports done: the engine may send jobs
    while True:
        job = _read_frame(inp)
        if job is None:
            return  # the engine closed the pipe: done
        name, args = job
        try:
            answer = (True, _JOBS[name](*args))
        except Exception as exc:  # sent back; the engine raises it as its own thread would
            answer = (False, exc)
        _write_frame(out, answer)


def _write_frame(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read_frame(stream: BinaryIO) -> Any:
    """The next object, or None at a clean end of stream; EOFError when cut mid-frame."""
    head = stream.read(_FRAME.size)
    if not head:
        return None
    if len(head) < _FRAME.size:
        raise EOFError("worker pipe cut mid-frame")
    (size,) = _FRAME.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("worker pipe cut mid-frame")
    return pickle.loads(data)


class OutOfNumbers(Exception):
    """The job wrote more tables than numbers were reserved for it (the engine redoes it)."""


# -- the engine's side -----------------------------------------------------------------------


class WorkerLost(Exception):
    """A worker died or could not start (its job is redone in the engine's thread)."""


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_SOURCE_ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_COMMAND, str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True)

        self.ready = False

    def check_ready(self, timeout: float | None = 0) -> bool:
        """Whether the worker has announced it is ready (waiting up to ``timeout`` seconds)."""
        if not self.ready and select.select([self.proc.stdout], [], [], timeout)[0]:
            try:
                self.ready = _read_frame(self.proc.stdout) is not None  # type: ignore[arg-type]
            except (OSError, EOFError, pickle.UnpicklingError):
                self.ready = False
            if not self.ready:
                raise WorkerLost(f"worker {self.proc.pid} exited at start ({self.proc.poll()})")
        return self.ready

    def call(self, name: str, args: tuple) -> Any:
        try:
            _write_frame(self.proc.stdin, (name, args))  # type: ignore[arg-type]
            answer = _read_frame(self.proc.stdout)  # type: ignore[arg-type]
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            raise WorkerLost(repr(exc)) from None
        if answer is None:
            raise WorkerLost(f"worker {self.proc.pid} exited ({self.proc.poll()})")
        ok, value = answer
        if not ok:
            raise value
        return value

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass

    def stop(self) -> None:
        """End a worker at once: idle, it holds nothing that needs an orderly exit (which would
        cost an interpreter teardown's CPU, competing with the engine's next open). Not waited
        for; subprocess reaps it later."""
        self.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass


class BuildPool:
    """The worker processes of one store: one per concurrent build, started on first use."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._starting: list[_Worker] = []
        self._cleaned = False
        self.jobs = 0
        self.losses = 0
        self.disabled: str | None = None  # why builds stay in the engine's threads

    def _take(self, size: int) -> _Worker | None:
        """A ready worker for a job of ``size`` input bytes, or None: build in the thread.

        Small jobs stay in the thread (the round trip would cost more than they hold the GIL).
        With no idle worker, one is started and waited for (a fraction of a second, spent
        without the GIL: cheaper for queries than building in the thread meanwhile); one that
        is not ready within STARTUP_WAIT leaves this job to the thread."""
        if size < MIN_WORKER_BYTES or fileio.faults_active():
            return None
        with self._lock:
            if self.disabled is not None:
                return None
            if self._idle:
                worker = self._idle.pop()
                self._busy.add(worker)
                return worker
            try:
                worker = self._starting.pop() if self._starting else self._spawn()
            except OSError as exc:
                self.disabled = f"cannot start a worker process: {exc}"
                return None
        try:  # without the lock: close() must not wait for this
            ready = worker.check_ready(STARTUP_WAIT)
        except WorkerLost as exc:
            with self._lock:
                self.disabled = f"cannot start a worker process: {exc}"
            worker.stop()
            return None
        with self._lock:
            if self.disabled is not None:  # closed meanwhile
                worker.stop()
                return None
            if not ready:
                self._starting.append(worker)  # a later job may find it ready
                return None
            self._busy.add(worker)
            return worker

    def _spawn(self) -> _Worker:
        if not self._cleaned:  # a crashed run's leftovers
            build = os.path.join(self.directory, BUILD_DIR)
            os.makedirs(build, exist_ok=True)
            for name in os.listdir(build):
                _unlink(os.path.join(build, name))
            self._cleaned = True
        return _Worker()

    def prestart(self, timeout: float = 60) -> bool:
        """Start a worker now and wait until it is ready (tests and benchmarks)."""
        with self._lock:
            if self.disabled is not None:
                return False
            if not self._starting:
                self._starting.append(self._spawn())
            worker = self._starting[0]
        if not worker.check_ready(timeout):
            return False
        with self._lock:
            if worker in self._starting:
                self._starting.remove(worker)
                self._idle.append(worker)
        return True

    def run(self, name: str, size: int, reserve: Callable[[], list[int]], *args: Any,
            closing: Callable[[], bool]) -> tuple[list[TableInfo], int] | None:
        """Run job ``name`` (``size`` input bytes; ``reserve`` gives it file numbers) in a
        worker and move its outputs into place.

        None when no worker can (disabled, lost, faults injected): the caller then builds in
        its own thread. Raises what the build raised (`CompactionAborted` when closing)."""
        worker = self._take(size)
        if worker is None:
            return None
        numbers = reserve()
        if name in _PACK:
            args = _PACK[name](*args)
        try:
            tables, dropped = worker.call(name, (self.directory, numbers, *args))
        except (WorkerLost, OutOfNumbers, CompactionAborted) as exc:
            self._drop(worker, numbers)
            if closing():
                raise CompactionAborted() from None
            with self._lock:
                self.losses += 1
                if self.losses >= MAX_LOSSES:
                    self.disabled = f"{self.losses} worker failures, the last: {exc!r}"
            return None
        except BaseException:
            self._drop(worker, numbers)  # the build failed (disk full...): its files are gone
            raise
        with self._lock:
            self._busy.discard(worker)
            self._idle.append(worker)
            self.jobs += 1
        try:
            for info, path in tables:
                fileio.replace(path, table_path(self.directory, info.number))
            fileio.sync_dir(self.directory)  # before a MANIFEST names them
        except BaseException:
            for info, path in tables:
                _unlink(path)
                _unlink(table_path(self.directory, info.number))
            raise
        return [info for info, _ in tables], dropped

    def _drop(self, worker: _Worker, numbers: list[int]) -> None:
        """Retire a worker whose job failed, and remove that job's ``build/`` files."""
        with self._lock:
            self._busy.discard(worker)
        worker.stop()
        worker.proc.wait()  # gone for sure (SIGKILL: at once): it creates no file after this
        build = os.path.join(self.directory, BUILD_DIR)
        prefixes = tuple(f"{n:06d}-" for n in numbers)
        try:
            names = os.listdir(build)
        except OSError:
            return
        for name in names:
            if name.startswith(prefixes):
                _unlink(os.path.join(build, name))

    def abort(self) -> None:
        """Kill the busy workers (``close()`` begins): their jobs end as aborted."""
        with self._lock:
            self.disabled = self.disabled or "closed"
            busy = list(self._busy)
        for worker in busy:
            worker.kill()

    def shutdown(self) -> None:
        self.abort()
        with self._lock:
            idle, self._idle, self._starting = self._idle + self._starting, [], []
        for worker in idle:
            worker.stop()

    def stats(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "losses": self.losses, "disabled": self.disabled}


def reserve_numbers(core: Any, count: int) -> list[int]:
    """``count`` consecutive unused file numbers of ``core`` (gaps left unused are harmless)."""
    with core.lock:
        first = core.next_file
        core.next_file += count
    return list(range(first, first + count))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
