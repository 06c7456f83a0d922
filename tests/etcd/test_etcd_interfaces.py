"""The etcd URL through the user-facing entry points: the example script, the CLI, connect()."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import sqlkv
from sqlkv.errors import NotSupportedError, OperationalError, ProgrammingError, SerializationFailure
from sqlkv.storage.etcd import parse_etcd_url

REPO = Path(__file__).resolve().parents[2]


def test_example_three_member_cluster_survives_leader_kill(etcd_cluster):
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "etcd_cluster.py")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "total balance 5000 (expected 5000); acknowledged transfers in the ledger: True" in result.stdout
    assert "more transfers committed after the kill" in result.stdout


def test_cli_runs_a_script_on_etcd(etcd_url, tmp_path):
    script = tmp_path / "s.sql"
    script.write_text("CREATE TABLE t (k INT PRIMARY KEY, v TEXT);\nINSERT INTO t VALUES (1, 'a'), (2, 'b');\n"
                      "SELECT v FROM t ORDER BY k DESC;\n")
    result = subprocess.run(
        [sys.executable, "-m", "sqlkv.cli", etcd_url, "-f", str(script), "--mode", "csv"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["v", "b", "a"]
    conn = sqlkv.connect(etcd_url)  # the data is in etcd, seen by another client
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM t")
    assert cur.fetchone() == (2,)
    conn.close()
    assert not any(tmp_path.glob("etcd*"))  # no local directory was created for the URL


def test_url_parsing_and_refusals():
    assert parse_etcd_url("etcd://a:1,[::1]:2/shop?max_txn_ops=512&timeout=2") == (
        [("a", 1), ("::1", 2)], "shop", {"max_txn_ops": 512, "timeout": 2.0}
    )
    for bad, message in [
        ("etcd://a:1", "needs a database name"),
        ("etcd://a:1/", "needs a database name"),
        ("etcd://a:1/x/y", "needs a database name"),
        ("etcd://a/shop", "not host:port"),
        ("etcd://a:99999/shop", "not host:port"),
        ("etcd://a:1/shop?colour=red", "unknown option 'colour'"),
        ("etcd://a:1/shop?timeout=soon", "not a number"),
        ("etcd://a:1/shop?page_size=0", "must be positive"),
    ]:
        with pytest.raises(ProgrammingError, match=message):
            parse_etcd_url(bad)
    with pytest.raises(NotSupportedError, match="passwords and TLS are not supported"):
        parse_etcd_url("etcd://root:secret@a:1/shop")
    assert parse_etcd_url("etcd://a:1, b:2/shop")[0] == [("a", 1), ("b", 2)]


def test_connect_options_that_do_not_apply_are_refused(etcd_url):
    with pytest.raises(OperationalError, match="read_only is not supported"):
        sqlkv.connect(etcd_url, read_only=True)
    with pytest.raises(ProgrammingError, match="do not apply to etcd"):
        sqlkv.connect(etcd_url, memtable_size=1)


def _cli(url, sql):
    result = subprocess.run([sys.executable, "-m", "sqlkv.cli", url, "-c", sql, "--mode", "csv"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_new_user_session_on_a_served_cluster(etcd_cluster):
    """README's walk-through: ``examples/etcd_cluster.py --serve`` keeps a 3-member cluster up;
    a CLI process and a driver process share one database, conflict, survive a leader kill."""
    serve = subprocess.Popen([sys.executable, str(REPO / "examples" / "etcd_cluster.py"), "--serve"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    pids: dict[str, int] = {}
    try:
        for line in serve.stdout:
            lines.append(line.strip())
            if line.startswith("stop with"):
                break
        text = "\n".join(lines)
        url = re.search(r"cluster up: (\S+)", text).group(1)
        pids = {m: int(p) for m, p in re.findall(r"member (m\d): \S+ pid (\d+)", text)}
        leader = re.search(r"leader: (m\d)", text).group(1)
        assert len(pids) == 3 and leader in pids

        _cli(url, "CREATE TABLE acct (id INT PRIMARY KEY, bal INT NOT NULL); INSERT INTO acct VALUES (1, 100)")
        conn = sqlkv.connect(url)
        cur = conn.cursor()
        cur.execute("SELECT bal FROM acct WHERE id = 1")
        assert cur.fetchone() == (100,)
        _cli(url, "UPDATE acct SET bal = bal - 30 WHERE id = 1")  # another process commits first
        cur.execute("UPDATE acct SET bal = bal - 50 WHERE id = 1")
        with pytest.raises(SerializationFailure):
            conn.commit()
        conn.rollback()
        os.kill(pids[leader], signal.SIGKILL)
        cur.execute("UPDATE acct SET bal = bal - 50 WHERE id = 1")  # the retry, after the election
        conn.commit()
        assert _cli(url, "SELECT bal FROM acct") == ["bal", "20"]
        conn.close()
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        finally:
            for pid in pids.values():  # normally already stopped by the script
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    assert serve.returncode == 0


def test_bench_sql_runs_etcd_beside_the_lsm_engine(etcd_cluster, capsys):
    """``sqlkv bench sql --engine sqlkv,etcd`` (the issue's spelling; argparse's prefix of
    --engines): etcd answers every workload as the LSM engine does, timed beside it."""
    import sqlkv.bench.sql as bench_sql

    status = bench_sql.run(["--scale", "120", "--engine", "sqlkv,etcd",
                            "--only", "point_select,index_lookup,range_scan,update"])
    output = capsys.readouterr().out
    assert status == 0, output
    assert "on etcd 3.5" in output and "all engines agreed" in output
    rows = [line for line in output.splitlines() if line[:2].strip().isdigit()]
    assert len(rows) == 5 and all(row.rstrip().endswith("ok") for row in rows), output


def test_databases_in_one_cluster_are_separate_key_prefixes(etcd_cluster):
    """``/shop`` and ``/shop.eu`` (a name that extends another) share nothing: not tables, not
    ids, not a DROP."""
    from tests.etcd.conftest import fresh_name

    base = fresh_name("pfx")
    urls = [etcd_cluster.url(base), etcd_cluster.url(base + ".eu"), etcd_cluster.url(base + "-x")]
    conns = [sqlkv.connect(u) for u in urls]
    for i, conn in enumerate(conns):
        cur = conn.cursor()
        cur.execute("CREATE TABLE t (k INT PRIMARY KEY, db INT)")
        cur.execute("INSERT INTO t VALUES (1, ?)", (i,))
        conn.commit()
    cur = conns[0].cursor()
    cur.execute("DROP TABLE t")
    conns[0].commit()
    for i, conn in enumerate(conns[1:], start=1):
        cur = conn.cursor()
        cur.execute("SELECT k, db FROM t")
        assert cur.fetchall() == [(1, i)]
        conn.commit()
    for conn in conns:
        conn.close()


def test_time_travel_is_refused_on_etcd(etcd_url):
    from sqlkv.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match="not supported on etcd"):
        sqlkv.connect(etcd_url, gc_ttl=60)
    conn = sqlkv.connect(etcd_url, autocommit=True)
    conn.execute("CREATE TABLE t (k INT PRIMARY KEY)")
    for sql in ("SELECT * FROM t AS OF SYSTEM TIME '-1s'", "BEGIN AS OF SYSTEM TIME '-1s'"):
        with pytest.raises(NotSupportedError, match="AS OF SYSTEM TIME is not supported by the EtcdEngine"):
            conn.execute(sql)
    assert not conn.in_transaction
    conn.execute("INSERT INTO t VALUES (1)")
    assert conn.execute("SELECT k FROM t").fetchall() == [(1,)]
    conn.close()
