"""Several processes on one database: one writer, read-only openers beside it (as SQLite's WAL
mode allows). A reader sees the last durable state when it opens and catches up before each
statement outside a transaction; the writer's flushes and compactions delete files the reader
was reading and must not disturb it. Real processes throughout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import sqlkv
from tests.interfaces.conftest import REPO, run_sqlkv

# A reader process: reads one SQL statement (or "commit") per stdin line, answers one JSON line.
READER = textwrap.dedent(
    """
    import json, sys
    import sqlkv
    conn = sqlkv.connect(sys.argv[1], read_only=True, autocommit=sys.argv[2] == "auto")
    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        line = line.strip()
        try:
            if line == "commit":
                conn.commit()
                answer = "ok"
            else:
                answer = [list(r) for r in conn.execute(line).fetchall()]
        except sqlkv.Error as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(answer), flush=True)
    """
)


class Reader:
    def __init__(self, path: str, autocommit: bool = True) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([sys.executable, "-c", READER, path, "auto" if autocommit else "txn"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=REPO)
        assert self._answer() == "ready", self.proc.stderr.read()

    def _answer(self):
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"reader died: {self.proc.stderr.read()}")
        return json.loads(line)

    def ask(self, sql: str):
        self.proc.stdin.write(sql + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read()


@pytest.fixture
def writer(tmp_path):
    conn = sqlkv.connect(str(tmp_path / "db"), autocommit=True)
    conn.execute("CREATE TABLE kv (k INT PRIMARY KEY, v TEXT)")
    yield conn
    conn.close()


def test_a_reader_opens_beside_the_writer_and_sees_its_commits(writer, tmp_path) -> None:
    path = str(tmp_path / "db")
    writer.executemany("INSERT INTO kv VALUES (?, ?)", [(i, f"v{i}") for i in range(100)])
    result = run_sqlkv(path, "--read-only", "--mode", "csv", "--no-headers", "-c", "SELECT count(*), max(v) FROM kv")
    assert (result.status, result.out, result.err) == (0, "100,v99\n", "")
    reader = Reader(path)
    try:
        assert reader.ask("SELECT count(*) FROM kv") == [[100]]
        writer.execute("INSERT INTO kv VALUES (100, 'new')")
        assert reader.ask("SELECT v FROM kv WHERE k = 100") == [["new"]]  # caught up by itself
        writer.execute("CREATE TABLE other (id INT PRIMARY KEY)")  # schema changes reach it too
        writer.execute("INSERT INTO other VALUES (7)")
        assert reader.ask("SELECT id FROM other") == [[7]]
        refused = reader.ask("INSERT INTO kv VALUES (1000, 'x')")
        assert refused["error"] == "OperationalError" and "read-only" in refused["message"]
        assert writer.execute("SELECT count(*) FROM kv").fetchone() == (101,)  # nothing written
    finally:
        reader.close()


def test_a_reader_transaction_keeps_its_snapshot_until_it_ends(writer, tmp_path) -> None:
    writer.execute("INSERT INTO kv VALUES (1, 'one')")
    reader = Reader(str(tmp_path / "db"), autocommit=False)
    try:
        assert reader.ask("SELECT count(*) FROM kv") == [[1]]  # opens a transaction
        writer.execute("INSERT INTO kv VALUES (2, 'two')")
        assert reader.ask("SELECT count(*) FROM kv") == [[1]]  # still its snapshot
        assert reader.ask("commit") == "ok"
        assert reader.ask("SELECT count(*) FROM kv") == [[2]]
    finally:
        reader.close()


def test_flushes_and_compactions_never_disturb_a_reader(writer, tmp_path) -> None:
    """The writer rewrites and deletes the table files and WAL segments under the reader."""
    reader = Reader(str(tmp_path / "db"))
    oracle: dict[int, str] = {}
    try:
        for round_no in range(6):
            rows = [(round_no * 1000 + i, f"r{round_no}-{i}" * 20) for i in range(400)]
            writer.executemany("INSERT INTO kv VALUES (?, ?)", rows)
            oracle.update(rows)
            writer.execute("DELETE FROM kv WHERE k % 7 = ?", (round_no,))
            for k in [k for k in oracle if k % 7 == round_no]:
                del oracle[k]
            engine = writer.session.db.engine
            engine.finish_background_work()
            engine.compact()  # new table files; the ones the reader holds are deleted
            got = reader.ask("SELECT count(*), sum(k), min(v), max(v) FROM kv")
            assert got == [[len(oracle), sum(oracle), min(oracle.values()), max(oracle.values())]]
    finally:
        reader.close()


def test_a_second_writer_is_still_refused(writer, tmp_path) -> None:
    result = run_sqlkv(str(tmp_path / "db"), "-c", "INSERT INTO kv VALUES (5, 'x')")
    assert result.status == 1 and "locked" in result.err


def test_sqlkv_check_runs_beside_the_writer(writer, tmp_path) -> None:
    writer.execute("CREATE INDEX kv_v ON kv (v)")
    writer.executemany("INSERT INTO kv VALUES (?, ?)", [(i, f"v{i}") for i in range(50)])
    result = run_sqlkv("check", str(tmp_path / "db"))
    assert (result.status, result.out) == (0, f"{tmp_path / 'db'}: ok\n"), result.err


def test_timeout_waits_for_the_writer_process_to_let_go(tmp_path) -> None:
    """sqlite3's ``connect(path, timeout=...)``: a second writer waits for the lock, then opens."""
    path = str(tmp_path / "db")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlkv, sys, time\nc = sqlkv.connect(sys.argv[1])\n"
         "print('locked', flush=True)\ntime.sleep(float(sys.argv[2]))\nc.close()", path, "1.5"],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(sqlkv.OperationalError, match="locked by another process"):
            sqlkv.connect(path)  # no timeout: refused at once
        with pytest.raises(sqlkv.OperationalError, match="locked by another process"):
            sqlkv.connect(path, timeout=0.1)  # too short to outlast the holder
        conn = sqlkv.connect(path, timeout=60)  # returns once the holder has closed
        assert holder.poll() is not None or holder.wait(timeout=5) == 0
        conn.execute("CREATE TABLE t (a INT PRIMARY KEY)")
        conn.commit()
        conn.close()
    finally:
        holder.wait(timeout=60)
    with pytest.raises(sqlkv.ProgrammingError, match="timeout must be"):
        sqlkv.connect(":memory:", timeout=-1)
