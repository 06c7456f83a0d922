"""The write-ahead log: every committed batch is one checksummed record, appended before
`write` returns.

Record layout (little-endian)::

    length:u32 | payload_crc:u32 | header_crc:u32 | payload[length]
    payload = base_seq:u64 | count:u32 | msgpack(ops)

``header_crc`` is crc32 of the first 8 bytes, so a damaged length is told apart from a short
file. The log is a series of segment files ``NNNNNN.log``; a new one starts whenever the
memtable is rotated (the finished one is fsynced, in every mode, so only the newest segment can
end in a torn write), and a segment is deleted once its memtable is flushed and the MANIFEST says
so. Write failures are handled here too; see `WalWriter`.

Durability: ``full`` fsyncs before acknowledging, with group commit -- a writer that finds an
fsync in progress waits for it, and the next leader's fsync covers every record written
meanwhile (the clock is the batch seq: ``sync_seq(seq)`` waits until ``synced_seq >= seq``); ``normal`` hands each record to the OS (survives a process crash); ``off`` buffers in
memory and writes when 1 MB piles up, at rotation and at close.
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from collections.abc import Iterator

import msgpack

from sqlkv.errors import CorruptionError, OperationalError
from sqlkv.storage.lsm import fileio
from sqlkv.storage.metrics import Histogram

HEADER = struct.Struct("<III")
PAYLOAD_HEAD = struct.Struct("<QI")
_OFF_BUFFER_LIMIT = 1 << 20

DURABILITY_LEVELS = ("full", "normal", "off")


def encode_record(base_seq: int, count: int, ops: list) -> bytes:
    payload = PAYLOAD_HEAD.pack(base_seq, count) + msgpack.packb(ops, use_bin_type=True)
    head = struct.pack("<II", len(payload), zlib.crc32(payload) & 0xFFFFFFFF)
    return head + struct.pack("<I", zlib.crc32(head) & 0xFFFFFFFF) + payload


class WalWriter:
    """Appends records to the current segment; `sync_seq` implements group commit.

    Failures (a full disk, an I/O error) never leave a partial record for a later, successful
    commit to be appended behind -- that record would then read as a torn tail and vanish. A
    failed append cuts the segment back to its last whole record; if even that fails, or an
    fsync fails (after which the kernel's page cache can no longer be trusted), the writer is
    *failed* and refuses every further append until the database is reopened and recovers
    from what is really on disk."""

    def __init__(self, path: str, durability: str, last_seq: int = 0) -> None:
        self.durability = durability
        self.path = path
        self._fd = fileio.open_file(path, append=True)
        self._size = os.fstat(self._fd).st_size  # bytes of whole records in this segment
        self._buffer = bytearray()
        self._cond = threading.Condition()
        self._syncing = False
        self.failed: str | None = None  # why appends are refused, once they are
        self.written = 0  # logical bytes appended over all segments
        self.written_seq = last_seq  # last batch seq written and applied (`note_applied`)
        self.synced_seq = last_seq  # every batch up to this seq is fsynced (the group-commit clock)
        self.syncs = 0
        self.fsync_latency: Histogram | None = None  # the engine's wal_fsync histogram

    @property
    def whole_bytes(self) -> int:
        """Bytes of whole records in the current segment (written to the file, maybe not synced)."""
        return self._size

    def check_writable(self) -> None:
        if self.failed is not None:
            raise OperationalError(f"{self.failed}; the database refuses writes until it is reopened")

    def append(self, record: bytes) -> int:
        """Append one record (caller holds the engine's write lock). Returns the end offset.

        OperationalError if the record could not be written; the segment then ends at the
        previous record, as if this append had never started."""
        self.check_writable()
        if self.durability == "off":
            self._buffer += record
            if len(self._buffer) >= _OFF_BUFFER_LIMIT:
                self._drain_buffer()
        else:
            try:
                fileio.write_all(self._fd, record)
            except OSError as exc:
                self._cut_back(exc)
                raise OperationalError(f"could not write the WAL {self.path}: {exc.strerror or exc}; "
                                       f"the transaction was not committed") from None
            self._size += len(record)
        self.written += len(record)
        return self.written

    def _cut_back(self, exc: OSError) -> None:
        """Drop whatever part of a failed append reached the file; fail the writer if we can't."""
        try:
            fileio.truncate(self._fd, self._size)
        except OSError as again:
            self.fail(f"could not write the WAL {self.path} ({exc.strerror or exc}) nor cut it "
                       f"back to its last whole record ({again.strerror or again})")
            self.check_writable()

    def fail(self, why: str) -> None:
        """Refuse every further append (something the log depends on could not be written)."""
        with self._cond:
            if self.failed is None:
                self.failed = why
            self._cond.notify_all()

    def _drain_buffer(self) -> None:
        """Write the records "off" mode buffered (already acknowledged: a failure fails the writer)."""
        if not self._buffer:
            return
        try:
            fileio.write_all(self._fd, self._buffer)
        except OSError as exc:
            self._cut_back(exc)
            self.fail(f"could not write buffered WAL records to {self.path}: {exc.strerror or exc}")
            self.check_writable()
        self._size += len(self._buffer)
        self._buffer = bytearray()

    def note_applied(self, seq: int) -> None:
        """Record that the batch ``seq`` (whose record was appended) is applied to the memtable:
        from now on an fsync that starts covers it (caller holds the engine's write lock).

        Noting after the apply, not at append, keeps a published seq from running ahead of the
        memtable: a leader only ever publishes seqs that readers can fully see."""
        with self._cond:
            self.written_seq = seq

    def sync_seq(self, seq: int) -> int:
        """Return once batch ``seq`` is fsynced; returns the synced seq (>= ``seq``).

        Group commit: the first waiter becomes the leader and fsyncs for every batch noted so
        far; waiters arriving meanwhile sleep, and the next leader's fsync covers them all.
        A failed fsync fails the writer: every waiter it covered gets OperationalError."""
        with self._cond:
            while self.synced_seq < seq:
                if self.failed is not None:
                    raise OperationalError(f"{self.failed}; whether this commit is durable is unknown "
                                           f"(the database refuses writes until it is reopened)")
                if self._syncing:
                    self._cond.wait()
                    continue
                if self._fd < 0:  # closed: close() synced everything it had
                    break
                self._syncing = True
                target, fd = self.written_seq, self._fd
                self._cond.release()
                error: OSError | None = None
                started = time.perf_counter_ns()
                try:
                    fileio.sync(fd)
                except OSError as exc:
                    error = exc
                finally:
                    self._cond.acquire()
                    self._syncing = False
                    if error is None:
                        if self.fsync_latency is not None:
                            self.fsync_latency.record(time.perf_counter_ns() - started)
                        self.syncs += 1
                        self.synced_seq = max(self.synced_seq, target)
                    elif self.failed is None:
                        self.failed = f"fsync of the WAL {self.path} failed: {error.strerror or error}"
                    self._cond.notify_all()
            return self.synced_seq

    def rotate(self, new_path: str) -> int:
        """Finish the current segment and continue in ``new_path`` (caller holds the write lock);
        returns the finished segment's size.

        The finished segment is fsynced whatever the durability mode: only the newest segment
        may end in a torn record, so recovery can call damage anywhere else corruption."""
        with self._cond:
            while self._syncing:
                self._cond.wait()
            self.check_writable()
            self._drain_buffer()
            try:
                fileio.sync(self._fd)
                fd = fileio.open_file(new_path, append=True)
            except OSError as exc:
                self.failed = f"could not start the WAL segment {new_path}: {exc.strerror or exc}"
                self._cond.notify_all()
                self.check_writable()
            self.synced_seq = self.written_seq
            fileio.close(self._fd)
            finished_size = self._size
            self._fd, self._size = fd, 0
            self.path = new_path
            self._cond.notify_all()
            return finished_size

    def close(self) -> None:
        """Write and fsync what is buffered and close; OperationalError if that failed."""
        with self._cond:
            while self._syncing:
                self._cond.wait()
            if self._fd < 0:
                return
            problem = None
            try:
                if self.failed is None:
                    self._drain_buffer()
                    fileio.sync(self._fd)  # a clean close leaves everything on disk, whatever the mode
                    self.synced_seq = self.written_seq
            except (OSError, OperationalError) as exc:
                problem = exc
            fileio.close(self._fd)
            self._fd = -1
            self._cond.notify_all()
        if problem is not None:
            raise OperationalError(f"closing the WAL {self.path} failed: {problem}") from None


def _only_zeros(data: bytes, start: int) -> bool:
    return not data[start:].strip(b"\x00")


class SegmentReader:
    """Reads one segment's records, oldest first; afterwards ``valid_end`` is the offset just
    past the last whole record (where a torn tail, if any, begins)."""

    def __init__(self, path: str, newest: bool = True) -> None:
        self.path = path
        self.newest = newest
        self.valid_end = 0
        self.torn = False

    def records(self) -> Iterator[tuple[int, int, int, list]]:
        """Yield ``(offset, base_seq, count, ops)`` per record.

        In the ``newest`` segment a torn tail -- an incomplete last record, or a last record
        followed by nothing but zeros -- ends the segment silently: it is the write a crash
        interrupted, never acknowledged. Older segments were fsynced whole when the log moved
        on, so there the same damage is corruption. CorruptionError names the file and offset.
        """
        path = self.path
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        size = len(data)
        while pos < size:
            if size - pos < HEADER.size:
                return self._torn("truncated record header", pos)
            length, payload_crc, header_crc = HEADER.unpack_from(data, pos)
            if zlib.crc32(data[pos: pos + 8]) & 0xFFFFFFFF != header_crc:
                if _only_zeros(data, pos):
                    return self._torn("zeroed record", pos)
                raise CorruptionError(f"corrupt WAL record header in {path} at offset {pos}")
            start = pos + HEADER.size
            end = start + length
            if end > size:  # the header reached the disk, the payload did not
                return self._torn("truncated record", pos)
            payload = data[start:end]
            if zlib.crc32(payload) & 0xFFFFFFFF != payload_crc or length < PAYLOAD_HEAD.size:
                if end == size or _only_zeros(data, end):
                    return self._torn("checksum mismatch in the last record", pos)
                raise CorruptionError(f"checksum mismatch in WAL {path} at offset {pos}")
            base_seq, count = PAYLOAD_HEAD.unpack_from(payload, 0)
            try:
                # tuples: a replay of thousands of operations allocates no list the collector counts
                ops = msgpack.unpackb(payload[PAYLOAD_HEAD.size:], raw=True, use_list=False)
            except Exception as exc:
                raise CorruptionError(f"undecodable WAL record in {path} at offset {pos}: {exc}") from None
            yield pos, base_seq, count, ops
            pos = self.valid_end = end

    def _torn(self, what: str, pos: int) -> None:
        if not self.newest:
            raise CorruptionError(f"{what} in WAL {self.path} at offset {pos} (not the newest segment, "
                                  f"so not a torn write: committed transactions are damaged)")
        self.torn = True


def read_segment(path: str, newest: bool = True) -> Iterator[tuple[int, int, int, list]]:
    """The records of one segment (see `SegmentReader.records`)."""
    return SegmentReader(path, newest).records()
