"""A small etcd v3 client over the JSON gateway (``POST /v3/kv/range`` etc.), stdlib only.

Why not gRPC: the gateway ships inside every etcd 3.x server, speaks the same protobuf messages
as JSON, and needs nothing beyond ``http.client``; the well-known Python gRPC clients for etcd
(``etcd3``, ``aetcd``) are unmaintained or asyncio-only and would pull in grpcio (a large native
wheel) for what is a handful of request shapes. One keep-alive HTTP/1.1 connection per thread per
endpoint keeps a request to one round trip.

Failover: a request goes to the endpoint that answered last; on a connection error, a timeout or
an etcd error that means "this member cannot serve now" (no leader, leader changed, stopped) the
client tries the next endpoint, backing off a little each full round, until ``deadline`` seconds
have passed. Only requests the caller marks ``idempotent`` are retried this way; for a write the
caller gets `OutcomeUnknown` and must find out itself whether it was applied (see
``commit.py``) -- a write is never sent twice blindly.

Members that fell behind: in a healthy cluster every member numbers revisions alike, and a
linearizable answer (a write, or a read that is not ``serializable``) comes at a revision at
least as new as any this client saw before sending it. etcd 3.5.0-3.5.2 break that after a
member is killed while applying (etcd issue 13766): the restarted member may skip a write and
number everything after it lower than the others, forever. Its compares then fail or pass
where the other members' do not, so its answers cannot be trusted. A linearizable answer
below the revision floor this client had reached when it sent the request therefore counts as
"this member cannot serve": a read moves to the next member, a write becomes `OutcomeUnknown`
(the other members applied it or not by their own compares; the caller settles it through
another member).
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
from typing import Any

from sqlkv.errors import OperationalError, SerializationFailure

# etcd errors after which another member (or the same one, a moment later) may succeed.
_UNAVAILABLE = (
    "no leader",
    "leader changed",
    "request timed out",
    "server stopped",
    "too many requests",
    "not capable",
    "raft: stopped",
    "unhealthy cluster",
    "timed out",
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


class EtcdUnavailable(OperationalError):
    """No endpoint could serve the request before the deadline (SQLSTATE 08006,
    connection_failure)."""

    sqlstate = "08006"
    code_in_message = True


class OutcomeUnknown(Exception):
    """A write was sent but no answer came back: it may or may not have been applied."""


class EtcdRequestError(OperationalError):
    """etcd refused the request (a deterministic error, not an outage)."""


class SnapshotCompacted(SerializationFailure):
    """The snapshot revision was compacted away by etcd: restart the transaction (40001)."""


class EtcdClient:
    """JSON-gateway requests against several endpoints with failover."""

    def __init__(
        self, endpoints: list[tuple[str, int]], timeout: float = 5.0, deadline: float = 20.0
    ) -> None:
        if not endpoints:
            raise OperationalError("etcd: no endpoint given")
        self.endpoints = endpoints
        self.timeout = timeout
        self.deadline = deadline
        self._preferred = 0  # index of the endpoint that answered last
        self._local = threading.local()
        self._all_conns: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self.requests = 0
        self.failovers = 0
        self.stale_answers = 0  # linearizable answers below the floor (a member behind)
        self._floor = 0  # the newest revision any answer showed this client

    # -- connections -----------------------------------------------------------------------

    def _conn(self, index: int) -> http.client.HTTPConnection:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        conn = conns.get(index)
        if conn is None:
            host, port = self.endpoints[index]
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
            conns[index] = conn
            with self._lock:
                self._all_conns.append(conn)
        return conn

    def _drop(self, index: int) -> None:
        conn = self._local.conns.pop(index, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        with self._lock:
            conns, self._all_conns = self._all_conns, []
        for conn in conns:
            conn.close()

    # -- requests --------------------------------------------------------------------------

    def call(self, path: str, body: dict[str, Any], idempotent: bool = True) -> dict[str, Any]:
        """POST ``body`` to ``/v3/<path>`` and return the decoded answer.

        Raises `EtcdUnavailable` when no endpoint answers in time, `EtcdRequestError` for a
        request etcd refuses, `SnapshotCompacted` for a read of a compacted revision and, for a
        non-idempotent request that was sent, `OutcomeUnknown` instead of retrying it.
        """
        payload = json.dumps(body).encode("ascii")
        # linearizable: the answer must be at least as new as everything seen before sending
        floor = 0 if body.get("serializable") else self._floor
        start = time.monotonic()
        attempt = 0
        last_error = "no attempt"
        n = len(self.endpoints)
        while True:
            index = (self._preferred + attempt) % n
            sent = False
            try:
                conn = self._conn(index)
                if conn.sock is None:
                    conn.connect()  # a refused connection here means nothing was sent
                sent = True
                conn.request("POST", "/v3/" + path, payload, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException) as exc:
                self._drop(index)
                last_error = f"{self._name(index)}: {type(exc).__name__}: {exc}"
                if sent and not idempotent:
                    self._skip(index)
                    raise OutcomeUnknown(last_error) from exc
            else:
                self.requests += 1
                if status == 200:
                    answer = _decode(data, self._name(index))
                    behind = self._behind(answer, floor)
                    if behind is None:
                        self._preferred = index
                        return answer
                    last_error = f"{self._name(index)}: {behind}"
                else:
                    message = _error_message(status, data)
                    if "required revision has been compacted" in message:
                        raise SnapshotCompacted(
                            "restart transaction: its snapshot revision was compacted by etcd "
                            f"({message}) (SQLSTATE 40001)"
                        )
                    if not any(mark in message for mark in _UNAVAILABLE):
                        raise EtcdRequestError(f"etcd {self._name(index)} refused /v3/{path}: {message}")
                    last_error = f"{self._name(index)}: {message}"
                if not idempotent:  # this member cannot tell: the caller settles it elsewhere
                    self._skip(index)
                    raise OutcomeUnknown(last_error)
            attempt += 1
            self._give_up_after(start, attempt, last_error)

    def _give_up_after(self, start: float, attempt: int, last_error: str) -> None:
        """Before trying the next endpoint: raise `EtcdUnavailable` past the deadline, else
        count the failover and, after a whole round failed, let an election finish."""
        if time.monotonic() - start > self.deadline:
            raise EtcdUnavailable(
                f"etcd unavailable: no endpoint of {self.describe()} answered within "
                f"{self.deadline:g}s (last error: {last_error})"
            )
        self.failovers += 1
        n = len(self.endpoints)
        if attempt % n == 0:
            time.sleep(min(0.5, 0.02 * 2 ** (attempt // n)))

    def _behind(self, answer: dict[str, Any], floor: int) -> str | None:
        """Why ``answer`` cannot be trusted (None: it can), raising the floor when it can."""
        rev = revision_of(answer)
        if rev < floor:
            self.stale_answers += 1
            return (
                f"answered at revision {rev}, behind revision {floor} this client had already "
                "seen: the member's data is behind or diverged from the cluster's (etcd "
                "3.5.0-3.5.2 can lose a write on a member killed under load, etcd issue 13766)"
            )
        with self._lock:
            if rev > self._floor:
                self._floor = rev
        return None

    def _skip(self, index: int) -> None:
        """After a write to ``index`` went unanswered, send the next request (the caller's
        check of the write's outcome) to another member: a hung member would swallow it too."""
        if self._preferred == index:
            self._preferred = (index + 1) % len(self.endpoints)
            self.failovers += 1

    def _name(self, index: int) -> str:
        host, port = self.endpoints[index]
        return f"{host}:{port}"

    def describe(self) -> str:
        return ",".join(self._name(i) for i in range(len(self.endpoints)))


def _error_message(status: int, data: bytes) -> str:
    """etcd's error text from a non-200 answer; a body that is not etcd's JSON (a proxy's
    page, a member shutting down) reads as unavailable, so the next endpoint is tried."""
    try:
        answer = json.loads(data)
        if isinstance(answer, dict) and (answer.get("message") or answer.get("error")):
            return str(answer.get("message") or answer.get("error"))
    except ValueError:
        pass
    return f"HTTP {status}, server stopped answering etcd's way: {data[:120]!r}"


def _decode(data: bytes, where: str) -> dict[str, Any]:
    try:
        answer = json.loads(data)
    except ValueError:
        raise OperationalError(f"etcd {where} sent a reply that is not JSON: {data[:120]!r}") from None
    if not isinstance(answer, dict):
        raise OperationalError(f"etcd {where} sent an unexpected reply: {data[:120]!r}")
    return answer


def revision_of(answer: dict[str, Any]) -> int:
    return int(answer.get("header", {}).get("revision", 0))

