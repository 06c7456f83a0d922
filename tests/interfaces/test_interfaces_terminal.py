"""The REPL in a real terminal (a pty): Tab completion, the pager and turning it off, Ctrl-C."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.interfaces.conftest import REPO
from tests.interfaces.test_interfaces_repl import CTRL_C, EOF_KEY, _controlling_tty

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _in_order(text: str, needles: tuple[str, ...]) -> bool:
    at = 0
    for needle in needles:
        at = text.find(needle, at)
        if at < 0:
            return False
        at += len(needle)
    return True


def _read_clean(fd: int, *needles: str, timeout: float = 60) -> str:
    """Read the terminal until ``needles`` show, in order, in its text (escapes and CRs removed)."""
    raw, text = "", ""
    deadline = time.monotonic() + timeout
    while not _in_order(text, needles):
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            raise AssertionError(f"did not see {needles!r}; got {text[-2000:]!r}")
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            raise AssertionError(f"the terminal closed before {needles!r}; got {text[-2000:]!r}")
        raw += chunk.decode("utf-8", "replace")
        text = _ANSI.sub("", raw)
    return text


class Terminal:
    """``sqlkv DB`` on a pty of ``rows`` lines, typed at like a user would."""

    def __init__(self, db: str, home: Path, rows: int = 24, **env: str) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 100, 0, 0))
        environment = dict(os.environ, TERM="xterm", HOME=str(home), PROMPT_TOOLKIT_NO_CPR="1", **env)
        environment.pop("COLUMNS", None)
        environment.pop("LINES", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "sqlkv.cli", db], stdin=slave, stdout=slave,
                                     stderr=slave, cwd=REPO, env=environment, preexec_fn=_controlling_tty)
        os.close(slave)
        self.prompt()

    def prompt(self) -> str:
        return _read_clean(self.master, "sqlkv>")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def run(self, line: str, until: str) -> str:
        """Type a line and Enter; what the terminal shows up to ``until`` (escapes removed).

        prompt-toolkit redraws the prompt as keys arrive, so the prompt alone cannot mark the
        end of a statement's output: the caller names text that comes last.
        """
        self.type(line + "\r")
        return _read_clean(self.master, until, "sqlkv>")  # and the next prompt is up

    def close(self) -> int:
        try:
            self.type(EOF_KEY)
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)


@pytest.fixture
def terminal(tmp_path: Path):
    opened: list[Terminal] = []

    def start(rows: int = 24, **env: str) -> Terminal:
        term = Terminal(str(tmp_path / "db"), tmp_path, rows, **env)
        opened.append(term)
        return term

    yield start
    for term in opened:
        if term.proc.poll() is None:
            term.close()


def test_tab_completes_tables_after_from_columns_after_select_and_dot_arguments(terminal) -> None:
    term = terminal()
    term.run("CREATE TABLE customers (id INT PRIMARY KEY, city TEXT);", "CREATE TABLE\n")
    term.run("INSERT INTO customers VALUES (1, 'Oslo');", "INSERT 1\n")
    # Completion runs in the background: wait for it to show before typing on.
    term.type("SELECT ci\t")  # one candidate: the column of the only table, inserted
    _read_clean(term.master, "SELECT city")
    term.type(" FROM cust\t")  # after FROM: the table
    _read_clean(term.master, "FROM customers")
    out = term.run(";", "row)")
    assert "| city |" in out and "| Oslo |" in out  # the typed `SELECT ci FROM cust` would fail
    term.type(".mode markd\t")  # a dot command's argument
    _read_clean(term.master, ".mode markdown")
    term.run("", "\n")
    out = term.run("SELECT id AS n FROM customers;", "|   1 |\n")
    assert "| n   |\n|-----|\n" in out  # markdown mode was completed and set
    assert term.close() == 0


def test_long_results_go_through_the_pager_until_pager_off(terminal, tmp_path: Path) -> None:
    pager = tmp_path / "pager.sh"
    pager.write_text("#!/bin/sh\nsed 's/^/PAGED:/'\n")
    pager.chmod(0o755)
    term = terminal(rows=12, PAGER=str(pager))
    tall = ("WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 40) "
            "SELECT x FROM s;")
    out = term.run(tall, "(40 rows)")
    assert "PAGED:|  1 |" in out and "PAGED:| 40 |" in out and "PAGED:(40 rows)" in out
    out = term.run("SELECT 'short' AS s;", "(1 row)")  # fits on the screen: printed directly
    assert "| short |" in out and "PAGED:" not in out
    term.run(".pager off", "\n")
    out = term.run(tall, "(40 rows)")
    assert "| 40 |" in out and "PAGED:" not in out
    assert term.close() == 0


def test_no_pager_when_stdout_is_not_a_terminal() -> None:
    """Piped output is never paged, even with a PAGER that would fail and a long result."""
    env = dict(os.environ, PAGER="false")
    query = "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 500) SELECT x FROM s"
    proc = subprocess.run([sys.executable, "-m", "sqlkv.cli"], input=query + ";\n", capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| 500 |" in proc.stdout


def test_ctrl_c_at_the_prompt_clears_the_line_and_exit_status_is_zero(terminal) -> None:
    term = terminal()
    term.type("SELECT 'dropped' AS d")
    term.type(CTRL_C)
    out = term.run("SELECT 'kept' AS k;", "(1 row)")
    assert "| kept |" in out and "| dropped |" not in out
    assert term.close() == 0


def test_import_shows_a_progress_bar_on_the_terminal_only(terminal, tmp_path: Path) -> None:
    data = tmp_path / "big.csv"
    data.write_text("k,v\n" + "".join(f"{i},value {i}\n" for i in range(3000)))
    term = terminal()
    out = term.run(f".import {data} big", "imported 3000 rows into big\n")
    assert f"importing {data} into big" in out  # the bar's title, drawn on the terminal
    assert "/3000" in out  # done/total counter
    out = term.run("SELECT count(*), sum(k) FROM big;", "(1 row)")
    assert "|     3000 | 4498500 |" in out  # k was inferred INT
    assert term.close() == 0
    piped = subprocess.run([sys.executable, "-m", "sqlkv.cli", ":memory:", f".import {data} big"],
                           capture_output=True, text=True, cwd=REPO, timeout=60)
    assert (piped.returncode, piped.stderr) == (0, "")  # no bar when stderr is not a terminal


def test_create_index_backfill_shows_a_progress_bar_on_the_terminal_only(terminal, tmp_path: Path) -> None:
    term = terminal(SQLKV_PROGRESS_AFTER="100")  # the bar waits for 100 rows instead of 20,000
    term.run("CREATE TABLE t (a INT PRIMARY KEY, b TEXT);", "CREATE TABLE\n")
    term.run("INSERT INTO t SELECT x, 'v' || (x % 7) FROM generate_series(1, 3000) AS g(x);", "INSERT 3000\n")
    out = term.run("CREATE INDEX tb ON t (b);", "CREATE INDEX\n")
    assert 'indexing "t" (tb)' in out and "3,000" in out  # title and rows done, drawn on the terminal
    out = term.run("SELECT count(*) FROM t WHERE b = 'v3';", "(1 row)")
    assert "|      429 |" in out  # the index was filled: 3000 // 7 rows have x % 7 = 3
    assert term.close() == 0
    piped = subprocess.run([sys.executable, "-m", "sqlkv.cli", str(tmp_path / "db"), "CREATE INDEX tb2 ON t (b)"],
                           capture_output=True, text=True, cwd=REPO, timeout=60,
                           env=dict(os.environ, SQLKV_PROGRESS_AFTER="100"))
    assert (piped.returncode, piped.stderr) == (0, "")  # no bar when stderr is not a terminal


def _stderr_on_a_terminal(args: list[str], script: str | None = None, **env: str) -> tuple[int, str, str]:
    """Run ``sqlkv ARGS`` with stderr on a pty, stdout a pipe and stdin /dev/null (or the piped
    ``script``): status, stdout, terminal text."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    environment = dict(os.environ, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", **env)
    proc = subprocess.Popen([sys.executable, "-m", "sqlkv.cli", *args],
                            stdin=subprocess.DEVNULL if script is None else subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=slave, cwd=REPO, env=environment)
    os.close(slave)
    if script is not None:
        proc.stdin.write(script.encode())
        proc.stdin.close()
    seen = b""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 0.5)[0]:
            if proc.poll() is not None:  # exited, and nothing left to read (a helper process
                break  # that inherited the pty must not keep the test waiting)
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read().decode()
    status = proc.wait(timeout=120)
    os.close(master)
    return status, out, _ANSI.sub("", seen.decode("utf-8", "replace"))


def test_check_shows_a_progress_bar_on_the_terminal_only(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    made = subprocess.run([sys.executable, "-m", "sqlkv.cli", db, "CREATE TABLE t (a INT PRIMARY KEY, b INT)",
                           "CREATE INDEX tb ON t (b)",
                           "INSERT INTO t SELECT x, x % 5 FROM generate_series(1, 2500) AS g(x)"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert made.returncode == 0, made.stderr
    status, out, terminal_text = _stderr_on_a_terminal(["check", db], SQLKV_PROGRESS_AFTER="100")
    assert (status, out) == (0, f"{db}: ok\n")
    assert 'checking "t"' in terminal_text and "2,500" in terminal_text
    piped = subprocess.run([sys.executable, "-m", "sqlkv.cli", "check", db], capture_output=True, text=True,
                           cwd=REPO, timeout=60, env=dict(os.environ, SQLKV_PROGRESS_AFTER="100"))
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, f"{db}: ok\n", "")


def test_bench_shows_a_progress_bar_over_its_workloads_on_the_terminal(tmp_path: Path) -> None:
    args = ["bench", "sql", "--scale", "200", "--engines", "sqlkv,sqlite3", "--only", "point_select,group_by"]
    status, out, terminal_text = _stderr_on_a_terminal(args)
    assert status == 0, out
    assert "point select by primary key" in out and "all engines agreed" in out  # results on stdout
    assert "sqlkv bench sql" in terminal_text  # the bar counts workloads (the data load among them)
    assert re.search(r"workloads +100.0% .*\b3/ +3\b", terminal_text), terminal_text


def test_a_bar_under_a_piped_script_leaves_the_script_alone(tmp_path: Path) -> None:
    """``sqlkv db < script`` with stderr on a terminal: the bar must not read (or choke on) stdin."""
    data = tmp_path / "big.csv"
    data.write_text("k,v\n" + "".join(f"{i},value {i}\n" for i in range(3000)))
    script = f".import {data} big\nSELECT count(*) AS n FROM big;\nSELECT 'after' AS s;\n"
    status, out, terminal_text = _stderr_on_a_terminal([str(tmp_path / "db")], script=script)
    assert status == 0, terminal_text
    assert "| 3000 |" in out and "| after |" in out  # every line of the script ran
    assert f"importing {data} into big" in terminal_text and "Traceback" not in terminal_text


def test_sqllogictest_runner_shows_a_progress_bar_on_the_terminal(tmp_path: Path) -> None:
    files = []
    for n in range(3):
        slt = tmp_path / f"t{n}.test"
        slt.write_text(f"statement ok\nCREATE TABLE t{n} (a INT PRIMARY KEY)\n\n"
                       f"query I\nSELECT count(*) FROM t{n}\n----\n0\n")
        files.append(str(slt))
    status, out, terminal_text = _stderr_on_a_terminal(["test", *files])
    assert status == 0, out + terminal_text
    assert "sqllogictest: 3 file(s)" in terminal_text and re.search(r"\b3/ *3\b", terminal_text), terminal_text


def test_ctrl_c_while_a_backfill_bar_is_up_cancels_the_create_index(terminal) -> None:
    """The bar's own key handling must not swallow Ctrl-C: the statement stops, nothing is left."""
    term = terminal(SQLKV_PROGRESS_AFTER="100")
    term.run("CREATE TABLE t (a INT PRIMARY KEY, b TEXT);", "CREATE TABLE\n")
    term.run("INSERT INTO t SELECT x, 'v' || x FROM generate_series(1, 60000) AS g(x);", "INSERT 60000\n")
    term.type("CREATE INDEX tb ON t (b);\r")
    _read_clean(term.master, 'indexing "t" (tb)', timeout=60)  # the bar is up: the backfill runs
    term.type(CTRL_C)
    _read_clean(term.master, "statement cancelled", "sqlkv>", timeout=60)
    out = term.run(".indexes t", "t_pkey")
    assert "tb" not in out.split(".indexes t", 1)[1]  # the failed CREATE INDEX left nothing behind
    out = term.run("SELECT count(*) FROM t;", "(1 row)")
    assert "|    60000 |" in out
    assert term.close() == 0


def test_kv_bench_counts_its_phases_on_the_terminal(tmp_path: Path) -> None:
    status, out, terminal_text = _stderr_on_a_terminal(["bench", "kv", "--keys", "2000", "--engines", "lsm,sqlite"])
    assert status == 0, out + terminal_text
    assert "reopen + first get" in out  # the results still go to stdout
    assert "sqlkv bench kv" in terminal_text and re.search(r"phases . \d+", terminal_text), terminal_text
    piped = subprocess.run([sys.executable, "-m", "sqlkv.cli", "bench", "kv", "--keys", "2000", "--engines", "lsm"],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
    assert (piped.returncode, piped.stderr) == (0, "")  # no bar off a terminal


def test_expr_bench_shows_a_bar_over_its_expressions_on_the_terminal() -> None:
    status, out, terminal_text = _stderr_on_a_terminal(["bench", "expr", "--rows", "500"])
    assert status == 0, out + terminal_text
    assert "hand-written Python" in out
    assert "sqlkv bench expr" in terminal_text and re.search(r"expressions +100.0%", terminal_text), terminal_text


def test_dump_and_backup_show_a_bar_over_the_tables_on_the_terminal(terminal, tmp_path: Path) -> None:
    term = terminal()
    term.run("CREATE TABLE a (k INT PRIMARY KEY); CREATE TABLE b (k INT PRIMARY KEY);", "CREATE TABLE\n")
    term.run("INSERT INTO a VALUES (1), (2);", "INSERT 2\n")
    out = term.run(f".dump {tmp_path / 'dump.sql'}", "2/  2")
    assert "dumping" in out
    out = term.run(f".backup {tmp_path / 'copy'}", "2/  2")
    assert f"backing up to {tmp_path / 'copy'}" in out
    out = term.run(".dump", "COMMIT;")  # dumped onto the terminal itself: no bar through the SQL
    assert "dumping" not in out.split(".dump", 1)[1]
    assert term.close() == 0
    assert (tmp_path / "dump.sql").read_text().count("INSERT INTO a") == 2
    copied = subprocess.run([sys.executable, "-m", "sqlkv.cli", str(tmp_path / "copy"), "--mode", "list",
                             "SELECT count(*) FROM a"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert copied.stdout.splitlines()[-1] == "2", copied.stderr
