"""A sqllogictest runner: runs SQLite's .test files against a fresh in-memory sqlkv database.

``python -m sqlkv.cli.slt select1.test`` reads the file into records (`parse_records`):
``statement ok|error`` with one SQL statement, ``query <types> <sortmode> [label]`` with its SQL
and expected values after ``----``, ``hash-threshold N``, ``halt``, each optionally preceded by
``skipif <engine>`` / ``onlyif <engine>``. We are engine ``sqlkv``: ``onlyif X`` records for
any other X (sqlite included: those test SQLite-only syntax) are skipped, ``skipif X`` records
for other engines run -- the practice of other engines' runners.

A query's rows are rendered the way the reference implementation renders them (`format_value`):
by the column's type letter -- ``I`` integer, ``R`` ``%.3f``, ``T`` text -- with ``NULL`` for
NULL, ``(empty)`` for '' and ``@`` for non-printable characters; then sorted per ``rowsort`` /
``valuesort`` / ``nosort``; then, when there are more values than the hash threshold,
compared as ``N values hashing to <md5 of each value + newline>``.
"""

from __future__ import annotations

import argparse
import decimal
import hashlib
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlkv.cli.progress import progress
from sqlkv.errors import Error
from sqlkv.sql import Database, Session

ENGINE = "sqlkv"
HASH_LINE = re.compile(r"^(\d+) values hashing to ([0-9a-f]{32})$")
NUMERIC_PREFIX = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass
class Record:
    kind: str                 # statement | query | hash-threshold | halt
    line: int
    sql: str = ""
    expect_error: bool = False
    types: str = ""
    sort: str = "nosort"
    label: str | None = None
    expected: list[str] = field(default_factory=list)
    has_expected: bool = False
    value: int = 0            # hash-threshold
    skip: bool = False        # excluded by skipif/onlyif


@dataclass
class Failure:
    path: str
    line: int
    sql: str
    message: str


@dataclass
class FileResult:
    path: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + self.failed


# -- parsing ----------------------------------------------------------------------------------

def parse_records(text: str) -> Iterator[Record]:
    """The records of a .test file, in order, with skipif/onlyif already decided."""
    lines = text.splitlines()
    i, n = 0, len(lines)
    while i < n:
        line = lines[i].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        skip = False
        while True:
            words = line.split()
            if words and words[0] in ("skipif", "onlyif") and len(words) > 1:
                engine = words[1].lower()
                if (words[0] == "skipif" and engine == ENGINE) or (words[0] == "onlyif" and engine != ENGINE):
                    skip = True
                i += 1
                line = lines[i].rstrip() if i < n else ""
                continue
            break
        start = i + 1
        words = line.split()
        if not words:
            i += 1
            continue
        if words[0] == "halt":
            yield Record("halt", start, skip=skip)
            i += 1
            continue
        if words[0] == "hash-threshold":
            yield Record("hash-threshold", start, value=int(words[1]), skip=skip)
            i += 1
            continue
        if words[0] not in ("statement", "query"):
            i += 1  # unknown directive: ignore the line
            continue
        i += 1
        sql_lines: list[str] = []
        while i < n and lines[i].strip() and lines[i].rstrip() != "----":
            sql_lines.append(lines[i])
            i += 1
        rec = Record(words[0], start, sql="\n".join(sql_lines), skip=skip)
        if words[0] == "statement":
            rec.expect_error = len(words) > 1 and words[1] == "error"
        else:
            rec.types = words[1] if len(words) > 1 else ""
            rec.sort = words[2] if len(words) > 2 else "nosort"
            rec.label = words[3] if len(words) > 3 else None
            if i < n and lines[i].rstrip() == "----":
                rec.has_expected = True
                i += 1
                while i < n and lines[i].strip():
                    rec.expected.append(lines[i].rstrip("\n").rstrip("\r"))
                    i += 1
        yield rec


# -- rendering --------------------------------------------------------------------------------

def _numeric_prefix(text: str) -> float | int:
    m = NUMERIC_PREFIX.match(text)
    if not m:
        return 0
    s = m.group(0).strip()
    try:
        return int(s)
    except ValueError:
        return float(s)


def _real_text(v: float) -> str:
    """SQLite's rendering of a REAL as text (``%!.15g``: always with a decimal point)."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Inf" if v > 0 else "-Inf"
    s = f"{v:.15g}"
    if "e" in s:
        mant, exp_ = s.split("e")
        if "." not in mant:
            mant += ".0"
        return f"{mant}e{exp_}"
    if "." not in s:
        s += ".0"
    return s


def _printable(s: str) -> str:
    if s == "":
        return "(empty)"
    return "".join(ch if " " <= ch <= "~" else "@" for ch in s)


def format_value(v: Any, letter: str) -> str:
    """One result value as the reference runner prints it, by the column's type letter."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        v = bytes(v).decode("utf-8", "replace")
    if letter == "I":
        if isinstance(v, str):
            v = _numeric_prefix(v)
        if isinstance(v, (float, decimal.Decimal)):
            if v != v or v in (float("inf"), float("-inf")):
                return "0"
            return str(int(v))
        if isinstance(v, int):
            return str(v)
        return _printable(str(v))
    if letter == "R":
        if isinstance(v, str):
            v = _numeric_prefix(v)
        if isinstance(v, (int, float, decimal.Decimal)):
            return f"{float(v):.3f}"
        return _printable(str(v))
    if isinstance(v, float):
        return _real_text(v)
    if isinstance(v, decimal.Decimal):
        return _real_text(float(v))
    return _printable(str(v))


def render(rows: list[tuple], types: str, sort: str) -> list[str]:
    """Rows -> the flat list of value strings, sorted per the record's sort mode."""
    letters = types or "T"
    text_rows = [[format_value(v, letters[j] if j < len(letters) else "T") for j, v in enumerate(row)]
                 for row in rows]
    if sort == "rowsort":
        text_rows.sort()
    values = [v for row in text_rows for v in row]
    if sort == "valuesort":
        values.sort()
    return values


def hash_values(values: list[str]) -> str:
    h = hashlib.md5()
    for v in values:
        h.update(v.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def compare(values: list[str], rec: Record, threshold: int) -> str | None:
    """None when ``values`` match the record's expectation, else a description of the mismatch."""
    expected = rec.expected
    if len(expected) == 1:
        m = HASH_LINE.match(expected[0].strip())
        if m:
            want_n, want_hash = int(m.group(1)), m.group(2)
            got_hash = hash_values(values)
            if len(values) == want_n and got_hash == want_hash:
                return None
            return f"expected {want_n} values hashing to {want_hash}, got {len(values)} values hashing to {got_hash}"
    if values == expected:
        if threshold and len(values) > threshold:
            return None  # the file lists values the reference would have hashed: still equal
        return None
    ncols = max(len(rec.types), 1)
    joined = [" ".join(values[k:k + ncols]) for k in range(0, len(values), ncols)]
    if joined == [e.strip() for e in expected]:
        return None
    return "expected:\n    " + "\n    ".join(expected[:20]) + "\n  got:\n    " + "\n    ".join(values[:20])


# -- running ----------------------------------------------------------------------------------

def _open_session(database: str = ":memory:") -> Any:
    db = Database.open(database)
    return db, Session(db, autocommit=True)


def run_file(path: str, timeout: float | None = None, max_records: int | None = None,
             database: str = ":memory:") -> FileResult:
    """Runs one .test file against a fresh database (in memory, or ``database``: a new etcd
    database's URL, see ``--etcd``).

    ``max_records`` stops after that many statement/query records (a bounded sample of a big
    file: the records are independent queries over tables the first records create).
    """
    result = FileResult(path)
    started = time.perf_counter()
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    db, session = _open_session(database)
    threshold = 0
    try:
        for rec in parse_records(text):
            if rec.skip:
                if rec.kind in ("statement", "query"):
                    result.skipped += 1
                continue
            if rec.kind == "halt":
                break
            if rec.kind == "hash-threshold":
                threshold = rec.value
                continue
            if max_records is not None and result.passed + result.failed >= max_records:
                break
            if timeout is not None and time.perf_counter() - started > timeout:
                result.failed += 1
                result.failures.append(Failure(path, rec.line, rec.sql, "file timeout: record not run"))
                continue
            message = _run_record(session, rec, threshold, Error)
            if message is None:
                result.passed += 1
            else:
                result.failed += 1
                result.failures.append(Failure(path, rec.line, rec.sql, message))
    finally:
        for closer in (getattr(session, "close", None), getattr(db, "close", None)):
            try:
                if closer is not None:
                    closer()
            except Exception:  # noqa: BLE001 - closing a scratch database must not hide results
                pass
    result.seconds = time.perf_counter() - started
    return result


def _run_record(session: Any, rec: Record, threshold: int, db_error: type) -> str | None:
    if rec.kind == "statement":
        try:
            res = session.execute(rec.sql)
            if getattr(res, "columns", None) is not None:
                for _ in res:
                    pass
        except db_error as exc:
            return None if rec.expect_error else f"unexpected error: {type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a crash is a failure of this record
            return f"internal error: {type(exc).__name__}: {exc}"
        return "expected an error, statement succeeded" if rec.expect_error else None
    try:
        res = session.execute(rec.sql)
        rows = list(res)
        ncols = len(res.columns or [])
    except db_error as exc:
        return f"query failed: {type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001
        return f"internal error: {type(exc).__name__}: {exc}"
    if rec.types and ncols != len(rec.types):
        return f"expected {len(rec.types)} columns, got {ncols}"
    values = render(rows, rec.types, rec.sort)
    return compare(values, rec, threshold)


def run(argv: list[str] | None = None) -> int:
    """Command line entry: ``sqlkv test FILE...``. Returns the process exit status."""
    ap = argparse.ArgumentParser(prog="sqlkv test", description="Run sqllogictest files against sqlkv.")
    ap.add_argument("files", nargs="+", help=".test files")
    ap.add_argument("-q", "--quiet", action="store_true", help="only the per-file lines and the total")
    ap.add_argument("--max-failures-shown", type=int, default=10, metavar="N",
                    help="failing records printed per file (default 10)")
    ap.add_argument("--timeout-per-file", type=float, default=None, metavar="SECONDS",
                    help="stop running a file's records after this long (the rest count as failed)")
    ap.add_argument("--max-records", type=int, default=None, metavar="N",
                    help="run only the first N records of each file (a quick sample)")
    ap.add_argument("--etcd", metavar="URL", default=None,
                    help="run each file in a fresh database of this etcd cluster: "
                         "etcd://host:port[,...]/name makes databases name-<pid>-1, -2... "
                         "(left in the cluster)")
    args = ap.parse_args(argv)
    if args.etcd is not None:
        from sqlkv.storage.etcd import parse_etcd_url

        try:
            parse_etcd_url(args.etcd)  # a bad URL is refused before any file runs
        except Error as exc:
            print(f"sqlkv test: {exc}", file=sys.stderr)
            return 2
    passed = failed = 0
    with progress(f"sqllogictest: {len(args.files)} file(s)") as bar:  # on a terminal only
        for number, path in enumerate(bar(args.files, total=len(args.files)), start=1):
            args.database = _file_database(args.etcd, number)
            p, f = _run_one(path, args, sys.stdout)  # patched while the bar is up
            passed, failed = passed + p, failed + f
    print(f"{passed} passed, {failed} failed", file=sys.stdout)
    return 1 if failed else 0


def _file_database(etcd_url: str | None, number: int) -> str:
    """The database file ``number`` runs in: in memory, or a new name in the etcd cluster."""
    if etcd_url is None:
        return ":memory:"
    base, _, query = etcd_url.partition("?")
    return f"{base}-{os.getpid()}-{number}" + (f"?{query}" if query else "")


def _run_one(path: str, args: argparse.Namespace, out: Any) -> tuple[int, int]:
    """Run one file and print its summary line and failures; (passed, failed)."""
    try:
        res = run_file(path, args.timeout_per_file, args.max_records, getattr(args, "database", ":memory:"))
    except OSError as exc:
        print(f"{path}: cannot read: {exc}", file=out)
        return 0, 1
    except Error as exc:  # the database could not be opened (an etcd cluster not answering)
        print(f"{path}: cannot open the database: {exc}", file=out)
        return 0, 1
    rate = 100.0 * res.passed / res.total if res.total else 100.0
    print(f"{path}: {res.passed} passed, {res.failed} failed, {res.skipped} skipped "
          f"({rate:.1f}%) in {res.seconds:.2f}s", file=out)
    if not args.quiet:
        for f in res.failures[:args.max_failures_shown]:
            sql = f.sql if len(f.sql) < 400 else f.sql[:400] + "..."
            print(f"  {f.path}:{f.line}: {sql}\n  {f.message}", file=out)
        if len(res.failures) > args.max_failures_shown:
            print(f"  ... {len(res.failures) - args.max_failures_shown} more failures", file=out)
    return res.passed, res.failed


if __name__ == "__main__":
    sys.exit(run())
