"""Corruption campaign: damage one file of a database at random -- flip a byte, cut the file
short (anywhere, or exactly at a WAL record boundary), zero a block, delete it -- and use the
database through SQL. Every trial must end in one of two ways: the damage is *detected* (a CorruptionError or OperationalError from open or a
query, or a problem row from ``CHECK DATABASE``), or it is *harmless* (every query returns
exactly the right rows and the check finds nothing). Wrong rows returned without an error are
the one outcome that fails the test.

The pristine database has every file kind: tables in L0 and deeper levels, WAL segments that
are not the newest, the newest (sealed by a clean close) and the MANIFEST. Trials per kind:
``SQLKV_CORRUPT_TRIALS`` (default 8, bounded for CI); the summary line printed with ``-s``
gives tried / detected / harmless / wrong counts.
"""

from __future__ import annotations

import glob
import os
import random
import shutil
from collections import Counter

import pytest

import sqlkv
from sqlkv.errors import CorruptionError, OperationalError

OPTIONS = dict(memtable_size=16 * 1024, block_size=512, target_file_size=16 * 1024,
               level_base_bytes=64 * 1024, l0_trigger=2)
ROWS = 1500
KINDS = ["sst", "wal-older", "wal-newest", "manifest"]
DAMAGES = ["flip", "truncate", "zero", "delete", "cut-records"]  # cut-records: at a record boundary


def _value(i: int) -> str:
    return "row-%d-" % i + "z" * (i % 37)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("pristine") / "db")
    conn = sqlkv.connect(path, **OPTIONS)
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, k INT, v TEXT)")
    conn.execute("CREATE INDEX t_k ON t (k)")
    conn.commit()
    for start in range(0, ROWS - 300, 100):  # most rows reach tables and get compacted
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                         [(i, i % 50, _value(i)) for i in range(start, start + 100)])
        conn.commit()
    conn.close()
    for session in range(3):  # the rest stays in WAL segments: one per open
        conn = sqlkv.connect(path, memtable_size=1 << 24)
        first = ROWS - 300 + session * 100
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                         [(i, i % 50, _value(i)) for i in range(first, first + 100)])
        conn.commit()
        conn.close()
    return path


def _files(path: str, kind: str) -> list[str]:
    logs = sorted(p for p in glob.glob(os.path.join(path, "*.log")) if os.path.getsize(p))
    if kind == "sst":
        return sorted(glob.glob(os.path.join(path, "*.sst")))
    if kind == "wal-older":
        return logs[:-1]
    if kind == "wal-newest":
        return logs[-1:]
    return [os.path.join(path, "MANIFEST")]


def _damage(target: str, damage: str, rng: random.Random) -> None:
    size = os.path.getsize(target)
    if damage == "delete":
        os.unlink(target)
        return
    with open(target, "r+b") as f:
        if damage == "flip":
            offset = rng.randrange(size)
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        elif damage == "truncate":
            f.truncate(rng.randrange(size))
        elif damage == "cut-records":  # whole WAL records gone, no torn one left to notice
            f.truncate(rng.choice(_record_starts(f.read())) if target.endswith(".log") else rng.randrange(size))
        else:
            offset = rng.randrange(size)
            f.seek(offset)
            f.write(b"\0" * min(512, size - offset))


def _record_starts(data: bytes) -> list[int]:
    """Offsets where a WAL record begins (its header starts with the payload length)."""
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos:pos + 4], "little")
    return starts


def _use(path: str) -> str:
    """'detected', 'harmless' or a description of the wrong data returned."""
    expected = [(i, i % 50, _value(i)) for i in range(ROWS)]
    try:
        conn = sqlkv.connect(path, create=False, memtable_size=1 << 24)
    except (CorruptionError, OperationalError):
        return "detected"
    try:
        got = conn.execute("SELECT id, k, v FROM t ORDER BY id").fetchall()
        if got != expected:
            return f"full scan returned {len(got)} rows, not the {len(expected)} written"
        for k in (0, 17, 49):
            rows = conn.execute("SELECT id FROM t WHERE k = ? ORDER BY id", (k,)).fetchall()
            if rows != [(i,) for i in range(ROWS) if i % 50 == k]:
                return f"index lookup k={k} returned wrong rows"
        for i in (0, 777, ROWS - 1):
            if conn.execute("SELECT v FROM t WHERE id = ?", (i,)).fetchall() != [(_value(i),)]:
                return f"point lookup id={i} returned a wrong row"
        if conn.execute("CHECK DATABASE").fetchall():
            return "detected"
        return "harmless"
    except (CorruptionError, OperationalError):
        return "detected"
    finally:
        conn.close()


@pytest.mark.parametrize("kind", KINDS)
def test_corruption_is_detected_never_returned_as_data(pristine, tmp_path, kind):
    trials = int(os.environ.get("SQLKV_CORRUPT_TRIALS", "8"))
    rng = random.Random(kind)
    outcomes: Counter = Counter()
    wrong = []
    assert _files(pristine, kind), f"the pristine database has no {kind} file"
    for trial in range(trials):
        damage = DAMAGES[trial % len(DAMAGES)]
        path = str(tmp_path / f"trial{trial}")
        shutil.copytree(pristine, path)
        target = rng.choice(_files(path, kind))
        _damage(target, damage, rng)
        outcome = _use(path)
        if outcome not in ("detected", "harmless"):
            wrong.append(f"{damage} {os.path.basename(target)}: {outcome}")
            outcome = "wrong"
        outcomes[outcome] += 1
        shutil.rmtree(path)
    print(f"\ncorruption campaign {kind}: tried {trials}, detected {outcomes['detected']}, "
          f"harmless {outcomes['harmless']}, wrong {outcomes['wrong']}")
    assert not wrong, wrong


def test_the_undamaged_copy_is_harmless(pristine, tmp_path):
    """The control: without damage, the campaign's checks all pass (so 'detected' means it)."""
    path = str(tmp_path / "copy")
    shutil.copytree(pristine, path)
    assert _use(path) == "harmless"
