"""The etcd engine: the KV interface over an etcd v3 cluster shared by many clients.

Walk ``SELECT name FROM users WHERE id = 10`` then ``UPDATE users SET name = 'x' WHERE id = 10``
in one transaction through it:

1. ``snapshot()`` asks etcd for its current revision (one round trip); the snapshot
   *is* that revision: every later read is a ``range`` with ``revision=R``, so it sees exactly
   the etcd transactions numbered ``<= R``, whatever other clients commit meanwhile.
2. The SELECT's ``get(k)`` is ``range(key=P+k, revision=R)``; scans page through ``range``
   with ``limit``, continuing after the last key, lazily (`_scan_pages`).
3. At COMMIT the transaction manager hands over the buffered writes plus the read spans
   (``WriteBatch.validate_reads(R, ...)``) and ``write`` turns them into one etcd ``txn``
   (``commit.py``) whose compares check that nothing read changed after R; etcd evaluates the
   compares and applies the writes atomically, so the check holds against every client.

Stored layout under the database prefix ``P = b"sqlkv/<name>/"``: ``P + b"d/" + key`` holds
``b"v" + value`` for a live key, or an empty value -- a *tombstone* -- for a deleted one.
etcd compares only see keys that exist, so a plain delete would be invisible to a
concurrent transaction that read the key; a tombstone is a write with a new ``mod_revision``
that the compare catches. ``P + b"m/..."`` holds engine metadata (the range-delete guard and the
per-client commit lanes, see ``commit.py``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from sqlkv.errors import InterfaceError
from sqlkv.storage.etcd.client import EtcdClient, EtcdRequestError, b64, revision_of, unb64
from sqlkv.storage.etcd.commit import CommitLimits, Committer
from sqlkv.storage.kv import Engine, Snapshot, WriteBatch, prefix_end

PAGE_SIZE = 512


class EtcdEngine(Engine):
    """One database (a key prefix) in an etcd cluster."""

    shared = True

    def __init__(
        self,
        client: EtcdClient,
        database: str,
        limits: CommitLimits | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.client = client
        self.database = database
        root = b"sqlkv/" + database.encode() + b"/"
        self.data_prefix = root + b"d/"
        self.data_end = prefix_end(self.data_prefix)
        self.meta_prefix = root + b"m/"
        self.page_size = page_size
        self.client_id = uuid.uuid4().hex
        self._rev_lock = threading.Lock()
        self._last_rev = 0
        self._closed = False
        self._committer = Committer(self, limits or CommitLimits())
        self._snapshots = 0
        self._pages = 0
        self._watch: tuple[bytes, bytes] | None = None
        self._opened = time.time()  # this client's counters count from here (nothing persists)

    # -- revisions ----------------------------------------------------------------------

    def _saw(self, answer: dict[str, Any]) -> int:
        rev = revision_of(answer)
        with self._rev_lock:
            if rev > self._last_rev:
                self._last_rev = rev
        return rev

    @property
    def last_seq(self) -> int:
        """The newest etcd revision this client has seen (no round trip)."""
        return self._last_rev

    def current_revision(self) -> int:
        """Ask etcd for its current revision (one linearizable round trip)."""
        return self._revision_and_guard()[0]

    def watch_span(self, start: bytes, end: bytes) -> None:
        """Have every snapshot also learn the newest ``mod_revision`` in ``[start, end)``, so
        `Snapshot.changed_since` over that span needs no round trip of its own (the SQL layer
        watches the catalog: its schema cache asks that question once per transaction)."""
        self._watch = (start, end)

    def _revision_and_guard(self) -> tuple[int, int, int | None]:
        """The current revision, the range-delete guard's mod_revision and the watched span's
        newest mod_revision (None: no span watched), in one linearizable round trip."""
        self._check_open()
        guard = {"key": b64(self.meta_prefix + b"rangedel"), "keys_only": True}
        if self._watch is None:
            answer = self.client.call("kv/range", guard)
            return self._saw(answer), _mod_of(answer), None
        start, end = self._watch
        newest = {"key": b64(self.data_prefix + start), "range_end": b64(self.data_prefix + end),
                  "keys_only": True, "sort_order": "DESCEND", "sort_target": "MOD", "limit": 1}
        # a txn without compares runs its success ops: two reads at one revision
        answer = self.client.call("kv/txn", {"success": [{"request_range": guard}, {"request_range": newest}]})
        guard_answer, newest_answer = (r.get("response_range", {}) for r in answer.get("responses") or ({}, {}))
        return self._saw(answer), _mod_of(guard_answer), _mod_of(newest_answer)

    # -- reads ----------------------------------------------------------------------------

    def _range(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_open()
        if body.get("revision"):
            # A read at a fixed revision is the same on every member that has applied it, so
            # the member answers from its own state (no ReadIndex round to the leader); one
            # that lags behind the revision says so and the read goes the linearizable way.
            try:
                answer = self.client.call("kv/range", {**body, "serializable": True})
            except EtcdRequestError as exc:
                if "future revision" not in str(exc):
                    raise
                answer = self.client.call("kv/range", body)
        else:
            answer = self.client.call("kv/range", body)
        self._saw(answer)
        self._pages += 1
        return answer

    def _get_at(self, key: bytes, rev: int) -> bytes | None:
        body: dict[str, Any] = {"key": b64(self.data_prefix + key)}
        if rev:
            body["revision"] = rev
        kvs = self._range(body).get("kvs") or ()
        for kv in kvs:
            value = unb64(kv.get("value"))
            return value[1:] if value else None
        return None

    def _scan_at(
        self, start: bytes, end: bytes | None, reverse: bool, limit: int | None, rev: int
    ) -> Iterator[tuple[bytes, bytes]]:
        self._check_open()
        if (limit is not None and limit <= 0) or (end is not None and end <= start):
            return
        n = len(self.data_prefix)
        lo = self.data_prefix + start
        hi = self.data_prefix + end if end is not None else self.data_end
        remaining = limit
        while True:
            page = self.page_size if remaining is None else min(self.page_size, max(remaining, 16))
            body: dict[str, Any] = {"key": b64(lo), "range_end": b64(hi), "limit": page}
            if reverse:
                body["sort_order"] = "DESCEND"
                body["sort_target"] = "KEY"
            if rev:
                body["revision"] = rev
            answer = self._range(body)
            if not rev:
                rev = revision_of(answer)  # later pages read the same revision
            kvs = answer.get("kvs") or ()
            last = b""
            for kv in kvs:
                last = unb64(kv.get("key"))
                value = unb64(kv.get("value"))
                if not value:
                    continue  # a tombstone
                yield last[n:], value[1:]
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        return
            if not answer.get("more") or not kvs:
                return
            if reverse:
                hi = last
            else:
                lo = last + b"\x00"

    def get(self, key: bytes) -> bytes | None:
        return self._get_at(key, 0)

    def scan(
        self, start: bytes, end: bytes | None, reverse: bool = False, limit: int | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        return self._scan_at(start, end, reverse, limit, 0)

    def _changed_since(self, start: bytes, end: bytes | None, since: int, snap: EtcdSnapshot) -> bool:
        if snap.guard_rev > since:
            return True  # a range delete removes keys without leaving a newer revision behind
        if snap.watched_mod is not None and self._watch is not None and end is not None:
            w_start, w_end = self._watch
            if w_start <= start and end <= w_end:
                return snap.watched_mod > since  # learnt with the snapshot: no round trip
        rev = snap.seq
        body = {
            "key": b64(self.data_prefix + start),
            "range_end": b64(self.data_prefix + end if end is not None else self.data_end),
            "min_mod_revision": since + 1,
            "revision": rev,
            "keys_only": True,
            "limit": 1,
        }
        return bool(self._range(body).get("kvs"))

    # -- writes ---------------------------------------------------------------------------

    def write(self, batch: WriteBatch) -> int:
        self._check_open()
        rev = self._committer.commit(batch)
        with self._rev_lock:
            if rev > self._last_rev:
                self._last_rev = rev
        return rev

    # -- snapshots and lifecycle -----------------------------------------------------------

    def snapshot(self) -> Snapshot:
        rev, guard_rev, watched_mod = self._revision_and_guard()
        self._snapshots += 1
        return EtcdSnapshot(self, rev, guard_rev, watched_mod)

    def compact(self) -> None:
        """Compact etcd's history up to now and drop the tombstones it no longer needs.

        Every transaction whose snapshot is older than now fails to commit afterwards
        (SerializationFailure) and retries, which is what makes dropping tombstones safe.
        """
        self._committer.compact_and_purge(self.current_revision())

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._committer.release_lanes()
        finally:
            self._closed = True
            self.client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("storage engine is closed")

    def stats(self) -> dict[str, Any]:
        return {
            "engine": "etcd",
            "since": self._opened,
            "endpoints": self.client.describe(),
            "database": self.database,
            "last_revision": self._last_rev,
            "requests": self.client.requests,
            "failovers": self.client.failovers,
            "stale_answers": self.client.stale_answers,
            "snapshots": self._snapshots,
            "range_pages": self._pages,
            **self._committer.stats(),
        }


class EtcdSnapshot(Snapshot):
    """A read view at one etcd revision (nothing to release: etcd keeps history until compaction)."""

    pages_itself = True  # a scan reads PAGE_SIZE keys per range request

    def __init__(self, engine: EtcdEngine, rev: int, guard_rev: int = 0, watched_mod: int | None = None) -> None:
        self._engine = engine
        self.seq = rev
        self.guard_rev = guard_rev  # the last range delete at or before ``rev``
        self.watched_mod = watched_mod  # the newest mod_revision in the engine's watched span

    def get(self, key: bytes) -> bytes | None:
        return self._engine._get_at(key, self.seq)

    def scan(
        self, start: bytes, end: bytes | None, reverse: bool = False, limit: int | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        return self._engine._scan_at(start, end, reverse, limit, self.seq)

    def changed_since(self, start: bytes, end: bytes | None, seq: int) -> bool:
        if seq >= self.seq:
            return False
        return self._engine._changed_since(start, end, seq, self)


def _mod_of(answer: dict[str, Any]) -> int:
    """The mod_revision of the first key of a range answer (0: no key)."""
    kvs = answer.get("kvs") or ()
    return int(kvs[0].get("mod_revision", 0)) if kvs else 0
