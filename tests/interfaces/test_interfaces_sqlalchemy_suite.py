"""SQLAlchemy's own dialect compliance suite (sqlalchemy.testing.suite) against sqlkv.

It runs in a separate pytest process: SQLAlchemy's pytest plugin takes over collection and
fixtures (tests/interfaces/sqla_suite/: conftest.py, pytest.ini, test.cfg, requirements.py).
Every test either passes or is skipped by a requirement declared off with its reason; a failure
or an error fails this test with the suite's report.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interfaces.conftest import REPO

pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed (pip install -e '.[test]')")

SUITE = REPO / "tests" / "interfaces" / "sqla_suite"


def _counts(summary: str) -> dict[str, int]:
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)}


def test_sqlalchemy_compliance_suite(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(SUITE / "pytest.ini"), str(SUITE), "-q", "-r", "fE",
         "--dburi", f"sqlkv:///{tmp_path}/suite?durability=off"],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:]
    counts = _counts(summary)
    assert proc.returncode == 0 and "failed" not in counts and "error" not in counts and "errors" not in counts, (
        proc.stdout[-6000:] + proc.stderr[-2000:])
    assert counts.get("passed", 0) > 950, summary  # the suite really ran
    # README reports the counts for one SQLAlchemy version: with that version they must be exact
    import sqlalchemy

    readme = (REPO / "README.md").read_text()
    stated = re.search(r"SQLAlchemy ([\d.]+)\) runs in the test\s+command .*?\*\*(\d+) passed, (\d+) failed,\s+"
                       r"(\d+) skipped\*\*", readme, re.S)
    assert stated, "README's compliance suite sentence moved: keep this test's pattern in step"
    if stated.group(1) == sqlalchemy.__version__:
        assert (counts.get("passed", 0), counts.get("failed", 0), counts.get("skipped", 0)) == tuple(
            int(n) for n in stated.groups()[1:]), f"README's counts are out of date: {summary}"
