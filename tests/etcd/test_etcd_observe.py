"""The sqlkv_internal figure tables on the etcd engine: every table answers; the figures etcd
does not keep say so; the transaction layer's figures (statements, conflicts, table reads) work
as on the other engines."""

from __future__ import annotations

import json

import pytest

import sqlkv
from sqlkv.cli.stats import run as stats_main
from sqlkv.errors import SerializationFailure

TABLES = ["engine_stats", "latencies", "compactions", "statement_stats", "table_stats", "transactions",
          "hot_ranges"]


def test_figure_tables_on_etcd(etcd_url):
    conn = sqlkv.connect(etcd_url)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO t VALUES (1, 10), (2, 20)")
    for table in TABLES:
        cur.execute(f"SELECT * FROM sqlkv_internal.{table}")
        cur.fetchall()
    cur.execute("SELECT name, value, text, since FROM sqlkv_internal.engine_stats")
    figures = {name: (value, text, since) for name, value, text, since in cur.fetchall()}
    assert figures["engine"][1] == "etcd" and figures["requests"][0] > 0
    assert all(since is not None for _value, _text, since in figures.values())
    assert figures["bloom_useful"] == (None, "not applicable: the etcd engine does not keep this figure",
                                       figures["bloom_useful"][2])
    cur.execute("SELECT operation, count, note FROM sqlkv_internal.latencies ORDER BY operation")
    rows = {op: (count, note) for op, count, note in cur.fetchall()}
    assert rows["commit"][0] >= 2 and rows["commit"][1] is None
    assert rows["flush"] == (None, "not applicable: the etcd engine does not time flush")
    cur.execute("SELECT keys, writes FROM sqlkv_internal.table_stats WHERE table_name = 't'")
    assert cur.fetchall() == [(2, 2)]

    other = sqlkv.connect(etcd_url)  # another client of the same database
    other.autocommit = True
    conn.autocommit = False
    cur.execute("SELECT v FROM t WHERE k = 1")
    assert cur.fetchall() == [(10,)]
    cur.execute("UPDATE t SET v = 0 WHERE k = 2")
    other.cursor().execute("UPDATE t SET v = 11 WHERE k = 1")
    with pytest.raises(SerializationFailure, match=r"read of key /Table/\d+/1/1/0 conflicts") as failed:
        conn.commit()
    assert "b'" not in str(failed.value)  # the key in the key grammar, not as raw bytes
    conn.autocommit = True
    cur.execute("SELECT conflict_key, conflict_span, reason, conflict_seq > snapshot_seq "
                "FROM sqlkv_internal.transactions WHERE state = 'serialization failure'")
    assert cur.fetchall() == [("/t/t_pkey/1/0", "/t/t_pkey/1/0", "read conflicts with a write by another client",
                               True)]
    other.close()
    conn.close()


def test_sqlkv_stats_on_etcd(etcd_url, capsys):
    conn = sqlkv.connect(etcd_url)
    conn.cursor().execute("CREATE TABLE t (k INT PRIMARY KEY)")
    conn.cursor().execute("INSERT INTO t VALUES (1), (2), (3)")
    conn.commit()
    conn.close()
    assert stats_main([etcd_url, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    engine = {r["name"]: r["value"] for r in doc["engine"]}
    assert engine["engine"] == "etcd" and engine["bloom_useful"].startswith("not applicable")
    assert [r["keys"] for r in doc["tables"] if r["table_name"] == "t"] == [3]
