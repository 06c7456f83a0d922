"""A member whose revisions disagree with the cluster's (etcd 3.5.0-3.5.2 after a crash, etcd
issue 13766): the client must not trust it, and a commit it refuses must not be misreported.

The divergence itself cannot be caused on purpose, so it is injected: a proxy in front of a real
member answers every request truthfully but, once armed, reports a revision lower than the
member's -- what a restarted member that skipped a write answers -- and the committer is told
its lane's last write got another revision than the member has it at.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading

import pytest

import sqlkv
from sqlkv.errors import OperationalError
from sqlkv.storage.etcd import open_etcd
from sqlkv.storage.etcd.commit import CommitOutcomeUnknown
from sqlkv.storage.kv import WriteBatch
from sqlkv.txn import TxnManager
from tests.etcd.conftest import fresh_name


class _BehindProxy:
    """An endpoint that forwards to a real member; armed, it answers ``lag`` revisions low."""

    def __init__(self, port: int, lag: int = 3) -> None:
        self.armed = False
        self.only_commits = False  # armed for commits (txns with compares and puts) alone
        self.lag = lag
        self.lagged: list[str] = []  # the requests answered low
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real member

            def do_POST(self):  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("POST", self.path, body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                is_commit = b'"compare": [{' in body and b"request_put" in body
                if proxy.armed and resp.status == 200 and (is_commit or not proxy.only_commits):
                    proxy.lagged.append(self.path)
                    answer = json.loads(data)
                    header = answer.setdefault("header", {})
                    header["revision"] = str(int(header.get("revision", 0)) - proxy.lag)
                    data = json.dumps(answer).encode()
                self.send_response(resp.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def behind(etcd_cluster):
    """(url, proxy): the proxy is the first endpoint, the member itself the second."""
    member = etcd_cluster.members[0]
    proxy = _BehindProxy(member.client_port)
    url = f"etcd://127.0.0.1:{proxy.port},{member.endpoint}/{fresh_name('behind')}"
    yield url, proxy
    proxy.close()


def _put(engine, key: bytes, value: bytes) -> int:
    batch = WriteBatch()
    batch.put(key, value)
    return engine.write(batch)


def test_read_from_a_member_behind_what_the_client_saw_fails_over(behind):
    url, proxy = behind
    engine = open_etcd(url)
    _put(engine, b"k", b"v1")  # through the proxy, truthful: the client has seen this revision
    assert engine.client.failovers == 0
    proxy.armed = True
    snap = engine.snapshot()  # linearizable: the proxy's low revision is refused, the member asked
    assert snap.seq == engine.current_revision()
    assert snap.get(b"k") == b"v1"
    stats = engine.stats()
    assert stats["stale_answers"] == 1 and stats["failovers"] >= 1
    assert engine.client.endpoints[engine.client._preferred][1] != proxy.port
    engine.close()


def test_serializable_reads_at_a_revision_are_not_held_to_the_floor(behind):
    """A follower legitimately lags: a read at a fixed revision it has applied is fine."""
    url, proxy = behind
    engine = open_etcd(url)
    _put(engine, b"k", b"v1")
    snap = engine.snapshot()
    proxy.armed = True
    assert snap.get(b"k") == b"v1"
    assert engine.stats()["stale_answers"] == 0
    engine.close()


def test_commit_answered_by_a_member_behind_is_settled_elsewhere_and_applied_once(behind):
    url, proxy = behind
    engine = open_etcd(url)
    manager = TxnManager.for_engine(engine)
    manager.run(lambda t: t.put(b"n", b"0"))
    proxy.armed = proxy.only_commits = True  # it applies, but its answer is untrustworthy
    txn = manager.begin()
    txn.put(b"n", txn.get(b"n") + b"+1")
    seq = txn.commit()
    proxy.armed = False
    assert engine.get(b"n") == b"0+1"  # applied exactly once
    stats = engine.stats()
    assert stats["stale_answers"] == 1 and stats["unknown_outcomes_resolved"] == 1
    assert proxy.lagged == ["/v3/kv/txn"]  # the commit, answered low once; settled elsewhere
    assert seq == engine.current_revision()  # the commit's real revision, from the member
    engine.close()


def test_sql_insert_after_failover_to_a_member_behind_commits_once(behind):
    """The CI flake's shape: a statement after the client's member changed, where the next
    member is behind the revisions the client has seen."""
    url, proxy = behind
    conn = sqlkv.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    conn.commit()
    cur.execute("INSERT INTO t VALUES (1, 'a')")
    conn.commit()
    proxy.armed = True
    cur.execute("INSERT INTO t VALUES (2, 'b')")
    conn.commit()
    cur.execute("SELECT k, v FROM t ORDER BY k")
    assert cur.fetchall() == [(1, "a"), (2, "b")]
    conn.commit()
    assert conn.session.db.engine.stats()["stale_answers"] >= 1
    conn.close()


@pytest.mark.parametrize("member_holds", ["our last write elsewhere", "an earlier write of ours", "no lane"])
def test_lane_unlike_what_the_cluster_acknowledged_is_outcome_unknown_not_another_process(etcd_url, member_holds):
    """A member whose lane differs from what the other members acknowledged -- our last write
    at another revision, an earlier write of ours (it failed the compares the others passed),
    or no lane at all -- fails the lane compare: that is a diverged member, and the others may
    have applied the commit; not a second process using this client's lanes."""
    from sqlkv.storage.etcd.client import b64

    engine = open_etcd(etcd_url)
    _put(engine, b"a", b"1")
    (lane,) = engine._committer._lanes
    if member_holds == "our last write elsewhere":
        lane.mod += 1  # as if the acknowledging member had numbered our last write one higher
        said = "with its last write"
    elif member_holds == "an earlier write of ours":
        lane.mod, lane.value = lane.mod + 1, engine._committer._lane_value()  # a newer one acknowledged
        said = "with an earlier write of this client"
    else:
        engine.client.call("kv/deleterange", {"key": b64(engine._committer._lane_key(lane))}, idempotent=False)
        said = "has no commit lane of this client"
    with pytest.raises(CommitOutcomeUnknown, match=said) as info:
        _put(engine, b"b", b"2")
    assert info.value.sqlstate == "40003" and "disagrees with the members that acknowledged" in str(info.value)
    assert f"at revision {lane.mod}" in str(info.value)
    assert engine._committer._lanes == []  # that lane's state is unknown: never reused
    assert engine.get(b"b") is None  # this member refused it
    _put(engine, b"c", b"3")  # a fresh lane commits
    assert engine.get(b"c") == b"3"
    engine.close()


def test_lane_overwritten_by_another_process_is_named_as_such(etcd_url):
    from sqlkv.storage.etcd.client import b64

    engine = open_etcd(etcd_url)
    other = open_etcd(etcd_url)
    _put(engine, b"a", b"1")
    (lane,) = engine._committer._lanes
    key = b64(engine._committer._lane_key(lane))
    other.client.call("kv/put", {"key": key, "value": b64(b"intruder")}, idempotent=False)
    with pytest.raises(OperationalError, match="commit lane was overwritten at revision") as info:
        _put(engine, b"b", b"2")
    assert not isinstance(info.value, CommitOutcomeUnknown)  # this member's answer is sure
    assert "another process wrote it" in str(info.value)
    assert engine.get(b"b") is None
    assert engine._committer._lanes == []  # the tampered lane is retired, not retried
    _put(engine, b"c", b"3")
    assert engine.get(b"c") == b"3"
    other.close()
    engine.close()
