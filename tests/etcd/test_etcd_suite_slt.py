"""A bounded sqllogictest sample on etcd, checked record by record against the in-memory engine
(the same SQL must give the same answers whatever the engine), plus more SQL suites on etcd."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sqlkv.storage
from sqlkv.cli.slt import run_file
from tests.sql.test_sql_access import *  # noqa: F401,F403
from tests.sql.test_sql_check import *  # noqa: F401,F403

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "sqllogictest"
FILES = [
    "select1.test",
    "evidence/slt_lang_update.test",
    "evidence/slt_lang_droptable.test",
    "evidence/in1.test",
    "index/delete/1/slt_good_0.test",
    "random/select/slt_good_0.test",
]
RECORDS = 120

pytestmark = pytest.mark.usefixtures("as_etcd")


def _outcomes(path: str):
    res = run_file(path, max_records=RECORDS)
    return res, [(f.line, f.message) for f in res.failures]


@pytest.mark.parametrize("rel", FILES)
def test_slt_sample_same_as_memory_engine(rel, monkeypatch):
    path = CORPUS / rel
    if not path.exists():
        pytest.skip(f"sqllogictest corpus file not found: {path}")
    on_etcd, etcd_failures = _outcomes(str(path))
    monkeypatch.undo()  # back to the in-memory engine for the reference run
    assert sqlkv.storage.MemoryEngine is sqlkv.storage.memory.MemoryEngine
    on_memory, memory_failures = _outcomes(str(path))
    assert on_etcd.total == on_memory.total > 0
    assert on_etcd.passed == on_memory.passed
    assert etcd_failures == memory_failures


def test_sqlkv_test_runs_files_on_etcd_with_the_memory_engines_results(etcd_cluster, capsys):
    """``sqlkv test --etcd URL FILES``: each file in a fresh etcd database, same results."""
    from sqlkv.cli import slt
    from sqlkv.storage.etcd import open_etcd
    from tests.etcd.conftest import TEST_MAX_TXN_OPS, fresh_name

    files = [str(CORPUS / rel) for rel in FILES[:2]]
    if not all(Path(f).exists() for f in files):
        pytest.skip("sqllogictest corpus not found")
    base = fresh_name("slt")
    url = etcd_cluster.url(base, max_txn_ops=TEST_MAX_TXN_OPS)
    argv = ["-q", "--max-records", "40", *files]
    status_etcd = slt.run(["--etcd", url, *argv])
    on_etcd = capsys.readouterr().out
    status_memory = slt.run(argv)
    on_memory = capsys.readouterr().out

    def summary(text):  # the per-file lines without their times
        return [line.rsplit(" in ", 1)[0] for line in text.splitlines()]

    assert status_etcd == status_memory and summary(on_etcd) == summary(on_memory)
    assert int(on_etcd.splitlines()[-1].split()[0]) > 40  # "N passed, M failed": records ran
    # ... in etcd: the first file's database holds its tables
    engine = open_etcd(etcd_cluster.url(f"{base}-{os.getpid()}-1"))
    assert any(True for _ in engine.scan(b"", None))
    engine.close()
    assert slt.run(["--etcd", "etcd://nowhere/x", *argv]) == 2
    assert "not host:port" in capsys.readouterr().err
