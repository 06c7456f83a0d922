"""Crash campaign at chosen I/O calls: kill -9 exactly inside a WAL append, a WAL rotation, a
table write of a flush or compaction, a MANIFEST replacement, while DDL and index backfills run.

`test_storage_sql_crash` kills at random moments, which mostly lands between I/O calls. Here the
child counts the file operations of one kind (a write to a ``.log``, the open that starts a new
segment, a write to an ``.sst``, the rename of ``MANIFEST.tmp``...) through the fault-injecting
file layer and SIGKILLs itself at the Nth -- after writing part of the data, for writes, so the
file ends in a torn record or block; a point may count only the calls made while a given
statement runs. An installed plan keeps flushes and compactions in the
process (see `sqlkv.storage.lsm.fileio.faults_active`), so their calls are counted too. The
child reports which statement and which storage job the kill interrupted; the parent reopens
the database and checks every acknowledged statement with `test_storage_sql_crash`'s checker.
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import textwrap

from tests.storage.test_storage_sql_crash import CHILD, OPTIONS, Acked, _check

# (operation, path suffix, bytes written before the kill for writes, statement running or "")
POINTS = [
    ("write", ".log", 9, ""),            # a WAL append torn mid-record
    ("sync", ".log", None, ""),          # before the fsync that acknowledges a commit
    ("open", ".log", None, ""),          # a WAL rotation (or the segment an open starts)
    ("write", ".sst", 100, ""),          # a flush or compaction output torn mid-block
    ("sync", ".sst", None, ""),          # a finished table not yet durable
    ("write", "MANIFEST.tmp", 20, ""),
    ("replace", "MANIFEST", None, ""),   # installing a flush/compaction/rotation
    ("write", ".log", 9, "CREATE INDEX"),  # the backfill's commit record torn
    ("sync", ".log", None, "CREATE INDEX"),
    ("open", ".log", None, "CREATE INDEX"),  # the backfill batch fills the memtable: rotation
    ("replace", "MANIFEST", None, "CREATE INDEX"),
    ("write", ".log", 9, "DROP INDEX"),
    ("write", ".log", 9, "COMMIT"),      # CREATE TABLE + rows in one transaction
    ("replace", "MANIFEST", None, "COMMIT"),
]

HOOK = textwrap.dedent(
    """
    import os, signal, sys, traceback
    from sqlkv.storage.lsm import fileio
    import sqlkv.dbapi.cursor
    _op, _suffix, _nth, _short, _during = sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7], sys.argv[8]
    _running = ["(none)"]  # the statement the child is executing

    def _tracking(method):
        def run(self, sql, *args, **kwargs):
            _running[0] = " ".join(sql.split()[:2]).upper()
            try:
                return method(self, sql, *args, **kwargs)
            finally:
                _running[0] = "(none)"
        return run

    _cursor = sqlkv.dbapi.cursor.Cursor
    _cursor.execute = _tracking(_cursor.execute)
    _cursor.executemany = _tracking(_cursor.executemany)
    _JOBS = [("flush_memtable", "flush"), ("run_one_compaction", "compaction"),
             ("_rotate_memtable", "wal-rotation"), ("_recover", "open")]

    def _phase():
        names = {f.name for f in traceback.extract_stack()}
        job = next((label for fn, label in _JOBS if fn in names), "commit")
        return f"{job} during {_running[0]}"

    class _KillAt(fileio.FaultPlan):
        def decide(self, op, path):
            if op != self.op or not path.endswith(self.suffix):
                return False
            if _during and not _running[0].startswith(_during):
                return False
            self.seen += 1
            return self.seen == self.nth

    def _kill(plan, path):
        sys.stderr.write("KILLED " + _phase() + "\\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    fileio._raise = _kill
    fileio._plans[:] = [_KillAt(op=_op, suffix=_suffix, nth=_nth,
                                short=None if _short == "-" else int(_short))]
    """
)


def _run_child(path: str, start: int, point: tuple, nth: int) -> tuple[list[list[str]], str]:
    op, suffix, short, during = point
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    args = [path, str(start), repr(OPTIONS), op, suffix, str(nth), "-" if short is None else str(short), during]
    child = subprocess.Popen([sys.executable, "-c", HOOK + CHILD, *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # the Nth call never came: stop it and say so
        child.send_signal(signal.SIGKILL)
        out, err = child.communicate()
        return [line.split() for line in out.decode().splitlines() if line.strip()], "not reached"
    assert child.returncode == -signal.SIGKILL, err.decode()[-2000:]
    killed = [line for line in err.decode().splitlines() if line.startswith("KILLED ")]
    assert killed, err.decode()[-2000:]
    return [line.split() for line in out.decode().splitlines() if line.strip()], killed[-1][7:]


def _campaign(path: str, trials: int, seed: int) -> collections.Counter:
    rng = random.Random(seed)
    acked = Acked()
    start = 0
    phases: collections.Counter = collections.Counter()
    for trial in range(trials):
        point = POINTS[trial % len(POINTS)]
        nth = rng.randint(1, 3) if point[3] else rng.randint(1, 120 if point[1] == ".log" else 40)
        lines, phase = _run_child(path, start, point, nth)
        acked.apply(lines)
        phases[f"{point[0]} {point[1]}: {phase}"] += 1
        start = _check(path, acked) + 1  # raises if anything acknowledged is lost or damaged
    print(f"\ncrash points: tried {trials} kills, recovered {trials} with CHECK DATABASE clean, "
          f"{len(acked.rows)} acknowledged rows, {acked.built} index backfills, lost 0")
    for name, n in sorted(phases.items()):
        print(f"  {n} x {name}")
    return phases


def test_kill_at_each_kind_of_io_call_loses_nothing_acknowledged(tmp_path):
    trials = int(os.environ.get("SQLKV_CRASH_POINT_TRIALS", str(len(POINTS))))
    phases = _campaign(str(tmp_path / "db"), trials, seed=3)
    assert sum(n for name, n in phases.items() if "not reached" not in name) >= trials // 2
