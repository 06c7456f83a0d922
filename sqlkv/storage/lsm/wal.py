"""The write-ahead log: every committed batch is one checksummed record, appended before
`write` returns.

Record layout (little-endian)::

    length:u32 | payload_crc:u32 | header_crc:u32 | payload[length]
    payload = base_seq:u64 | count:u32 | msgpack(ops)

``header_crc`` is crc32 of the first 8 bytes, so a damaged length is told apart from a short
file. The log is a series of segment files ``NNNNNN.log``; a new one starts whenever the
memtable is rotated, and a segment is deleted once its memtable is flushed and the MANIFEST says
so.

Durability: ``full`` fsyncs before acknowledging, with group commit -- a writer that finds an
fsync in progress waits for it, and the next leader's fsync covers every record written
meanwhile (the clock is the batch seq: ``sync_seq(seq)`` waits until ``synced_seq >= seq``); ``normal`` hands each record to the OS (survives a process crash); ``off`` buffers in
memory and writes when 1 MB piles up, at rotation and at close.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Iterator

import msgpack

from sqlkv.errors import CorruptionError

HEADER = struct.Struct("<III")
PAYLOAD_HEAD = struct.Struct("<QI")
_OFF_BUFFER_LIMIT = 1 << 20

DURABILITY_LEVELS = ("full", "normal", "off")


def encode_record(base_seq: int, count: int, ops: list) -> bytes:
    payload = PAYLOAD_HEAD.pack(base_seq, count) + msgpack.packb(ops, use_bin_type=True)
    head = struct.pack("<II", len(payload), zlib.crc32(payload) & 0xFFFFFFFF)
    return head + struct.pack("<I", zlib.crc32(head) & 0xFFFFFFFF) + payload


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class WalWriter:
    """Appends records to the current segment; `sync_to` implements group commit."""

    def __init__(self, path: str, durability: str, last_seq: int = 0) -> None:
        self.durability = durability
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._buffer = bytearray()
        self._cond = threading.Condition()
        self._syncing = False
        self.written = 0  # logical bytes appended over all segments
        self.written_seq = last_seq  # last batch seq written and applied (`note_applied`)
        self.synced_seq = last_seq  # every batch up to this seq is fsynced (the group-commit clock)
        self.syncs = 0

    def append(self, record: bytes) -> int:
        """Append one record (caller holds the engine's write lock). Returns the end offset."""
        if self.durability == "off":
            self._buffer += record
            if len(self._buffer) >= _OFF_BUFFER_LIMIT:
                self._drain_buffer()
        else:
            _write_all(self._fd, record)
        self.written += len(record)
        return self.written

    def _drain_buffer(self) -> None:
        if self._buffer:
            _write_all(self._fd, self._buffer)
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
        far; waiters arriving meanwhile sleep, and the next leader's fsync covers them all."""
        with self._cond:
            while self.synced_seq < seq:
                if self._syncing:
                    self._cond.wait()
                    continue
                if self._fd < 0:  # closed: close() synced everything it had
                    break
                self._syncing = True
                target, fd = self.written_seq, self._fd
                self._cond.release()
                try:
                    os.fdatasync(fd)
                finally:
                    self._cond.acquire()
                    self._syncing = False
                    self.syncs += 1
                    self.synced_seq = max(self.synced_seq, target)
                    self._cond.notify_all()
            return self.synced_seq

    def rotate(self, new_path: str) -> None:
        """Finish the current segment and continue in ``new_path`` (caller holds the write lock)."""
        with self._cond:
            while self._syncing:
                self._cond.wait()
            self._drain_buffer()
            if self.durability == "full":
                os.fdatasync(self._fd)
                self.synced_seq = self.written_seq
            os.close(self._fd)
            self._fd = os.open(new_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self.path = new_path
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            while self._syncing:
                self._cond.wait()
            if self._fd < 0:
                return
            self._drain_buffer()
            os.fdatasync(self._fd)  # a clean close leaves everything on disk, whatever the mode
            os.close(self._fd)
            self._fd = -1
            self.synced_seq = self.written_seq
            self._cond.notify_all()


def _only_zeros(data: bytes, start: int) -> bool:
    return not data[start:].strip(b"\x00")


def read_segment(path: str) -> Iterator[tuple[int, int, list]]:
    """Yield ``(base_seq, count, ops)`` for each record of a segment, oldest first.

    A torn tail -- an incomplete last record, or a last record followed by nothing but zeros --
    ends the segment silently. Any other damage raises CorruptionError naming file and offset.
    """
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    size = len(data)
    while pos < size:
        if size - pos < HEADER.size:
            return  # a header cut short can only be a torn tail
        length, payload_crc, header_crc = HEADER.unpack_from(data, pos)
        if zlib.crc32(data[pos: pos + 8]) & 0xFFFFFFFF != header_crc:
            if _only_zeros(data, pos):
                return
            raise CorruptionError(f"corrupt WAL record header in {path} at offset {pos}")
        start = pos + HEADER.size
        end = start + length
        if end > size:
            return  # the header made it to disk, the payload did not: torn tail
        payload = data[start:end]
        if zlib.crc32(payload) & 0xFFFFFFFF != payload_crc or length < PAYLOAD_HEAD.size:
            if end == size or _only_zeros(data, end):
                return
            raise CorruptionError(f"checksum mismatch in WAL {path} at offset {pos}")
        base_seq, count = PAYLOAD_HEAD.unpack_from(payload, 0)
        try:
            ops = msgpack.unpackb(payload[PAYLOAD_HEAD.size:], raw=True, use_list=True)
        except Exception as exc:
            raise CorruptionError(f"undecodable WAL record in {path} at offset {pos}: {exc}") from None
        yield base_seq, count, ops
        pos = end
