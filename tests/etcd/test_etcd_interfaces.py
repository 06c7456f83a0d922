"""The etcd URL through the user-facing entry points: the example script, the CLI, connect()."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import sqlkv
from sqlkv.errors import OperationalError, ProgrammingError
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


def test_connect_options_that_do_not_apply_are_refused(etcd_url):
    with pytest.raises(OperationalError, match="read_only is not supported"):
        sqlkv.connect(etcd_url, read_only=True)
    with pytest.raises(ProgrammingError, match="do not apply to etcd"):
        sqlkv.connect(etcd_url, memtable_size=1)


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
