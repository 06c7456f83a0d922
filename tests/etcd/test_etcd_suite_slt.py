"""A bounded sqllogictest sample on etcd, checked record by record against the in-memory engine
(the same SQL must give the same answers whatever the engine), plus more SQL suites on etcd."""

from __future__ import annotations

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
