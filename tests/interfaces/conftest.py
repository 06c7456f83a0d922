"""Helpers for the interface tests: run the ``sqlkv`` program, compare with sqlite3."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# SQLAlchemy's compliance suite runs in its own pytest process (its plugin takes over collection)
collect_ignore = ["sqla_suite"]
EXAMPLES = REPO / "examples"


@dataclass
class Completed:
    status: int
    out: str
    err: str


def run_sqlkv(*args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 60) -> Completed:
    """Run ``python -m sqlkv.cli ARGS`` as a user would run ``sqlkv ARGS``."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "sqlkv.cli", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=env,
        timeout=timeout,
    )
    return Completed(proc.returncode, proc.stdout, proc.stderr)


def sqlite_rows(statements: list[str]) -> list[list[tuple]]:
    """Run statements on a fresh sqlite3 database; the rows of each one that returns rows."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    out = []
    for sql in statements:
        cur = conn.execute(sql)
        if cur.description is not None:
            out.append(cur.fetchall())
    conn.close()
    return out
