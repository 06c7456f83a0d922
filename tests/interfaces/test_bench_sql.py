"""Smoke tests of ``sqlkv bench sql`` at tiny scales: it completes, the engines agree, and a
wrong answer from an engine is caught. No timing assertions."""

from __future__ import annotations

import importlib.util
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sqlkv.bench.sql as bench_sql
from sqlkv.bench.sql_data import Dataset, scattered_keys
from sqlkv.bench.sql_engines import ENGINE_CLASSES, SqliteEngine
from sqlkv.bench.sql_report import first_difference, normalize_answer
from sqlkv.bench.sql_workloads import RANGE_SCAN, WORKLOADS

TINY = ["--scale", "250"]


def _workload_rows(output: str) -> list[str]:
    """The table rows, one per workload, keyed by their number column."""
    numbers = {str(i) for i in range(1, len(WORKLOADS) + 1)}
    return [line for line in output.splitlines() if line[:2].strip() in numbers]


def test_sqlkv_and_sqlite3_agree_on_every_workload(capsys: pytest.CaptureFixture[str]) -> None:
    status = bench_sql.run(TINY + ["--engines", "sqlkv,sqlite3"])
    output = capsys.readouterr().out
    assert status == 0, output
    rows = _workload_rows(output)
    assert len(rows) == len(WORKLOADS), output
    assert all(row.rstrip().endswith("ok") for row in rows), output
    assert "geometric mean sqlkv/sqlite3" in output


def test_sqlite3_alone_completes_with_repeats(capsys: pytest.CaptureFixture[str]) -> None:
    # Repeats re-run the update and delete workloads with fresh keys; the check queries must
    # still agree with themselves, and nothing may error.
    status = bench_sql.run(TINY + ["--engines", "sqlite3", "--repeat", "2"])
    output = capsys.readouterr().out
    assert status == 0, output
    assert len(_workload_rows(output)) == len(WORKLOADS)
    assert "x2" in output


@pytest.mark.skipif(importlib.util.find_spec("duckdb") is None, reason="duckdb not installed")
def test_duckdb_agrees_with_sqlite3(capsys: pytest.CaptureFixture[str]) -> None:
    status = bench_sql.run(TINY + ["--engines", "sqlite3,duckdb"])
    output = capsys.readouterr().out
    assert status == 0, output


class _RowDroppingCursor:
    """Wraps a sqlite3 cursor and loses the last row of every range scan."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self._sql = ""

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._sql = sql
        return self._cursor.execute(sql, params)

    def fetchall(self) -> list[Any]:
        rows = self._cursor.fetchall()
        return rows[:-1] if self._sql == RANGE_SCAN and rows else rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class _WrongSqlkv(SqliteEngine):
    """sqlite3 posing as sqlkv, with a bug in range scans."""

    name = "sqlkv"

    def cursor(self) -> Any:
        return _RowDroppingCursor(self.connection.cursor())


def test_a_wrong_answer_fails_the_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(ENGINE_CLASSES, "sqlkv", _WrongSqlkv)
    monkeypatch.setattr(bench_sql, "engine_unavailable_reason", lambda name: None)
    status = bench_sql.run(TINY + ["--engines", "sqlkv,sqlite3", "--only", "range_scan,point_select"])
    output = capsys.readouterr().out
    assert status == 1
    assert "RESULT MISMATCH in 'range scan, 100 keys'" in output
    assert "operation #0" in output
    point_row = next(row for row in _workload_rows(output) if "point select" in row)
    assert point_row.rstrip().endswith("ok")


def test_profile_prints_the_timed_functions(capsys: pytest.CaptureFixture[str]) -> None:
    status = bench_sql.run(TINY + ["--engines", "sqlite3", "--profile", "point_select",
                                   "--profile-engine", "sqlite3"])
    output = capsys.readouterr().out
    assert status == 0, output
    assert "cumulative" in output
    assert "method 'execute' of 'sqlite3.Cursor'" in output
    # --profile implies --only: the load plus the profiled workload.
    assert len(_workload_rows(output)) == 2


@pytest.mark.parametrize(
    "argv",
    [["--only", "no_such_workload"], ["--engines", "oracle"], ["--scale", "0"], ["--repeat", "0"],
     ["--only", "range_scan", "--profile", "join"]],
)
def test_bad_options_exit_with_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_sql.run(argv) == 2
    assert "error" in capsys.readouterr().err


def test_workloads_selected_by_number_keep_the_load_first() -> None:
    options = bench_sql.parse_options(["--engines", "sqlite3", "--only", "9,2"])
    assert [w.name for w in options.workloads] == ["bulk_insert", "point_select", "order_limit"]


def test_normalisation_equates_driver_spellings_but_not_values() -> None:
    sqlite_rows = [("paid", 3, 2.5), (None, 1, 4.0)]
    other_rows = [(None, Decimal(1), Decimal("4.0")), ("paid", 3, 2.5000000000001)]
    assert normalize_answer(sqlite_rows, True) == normalize_answer(other_rows, True)
    assert normalize_answer(sqlite_rows, False) != normalize_answer(other_rows, False)
    assert normalize_answer([(1, 2.5)], True) != normalize_answer([(1, 2.6)], True)
    assert first_difference([[(1,)], [(2,)]], [[(1,)], [(3,)]]) is not None
    assert first_difference([[(1,)]], [[(1,)], [(2,)]]) is not None
    assert first_difference([[(1,)], 1], [[(1,)], 1]) is None


@given(st.integers(min_value=1, max_value=5000), st.integers(min_value=1, max_value=50))
def test_scattered_keys_never_repeat_within_the_table(n: int, count: int) -> None:
    reps = max(1, n // count)
    keys = [k for rep in range(reps) for k in scattered_keys(n, rep * min(count, n), min(count, n))]
    assert len(set(keys)) == len(keys)
    assert all(1 <= k <= n for k in keys)


def test_generated_rows_are_deterministic_and_skus_unique() -> None:
    data = Dataset(25_000, seed=3)
    first = [row for chunk in data.order_chunks() for row in chunk]
    again = [row for chunk in Dataset(25_000, seed=3).order_chunks() for row in chunk]
    assert first == again
    assert [row[0] for row in first] == list(range(1, 25_001))
    assert len({row[2] for row in first}) == len(first)
    assert all(1 <= row[1] <= data.customers for row in first)


class _BrokenEngine(SqliteEngine):
    """An engine whose every statement fails, as a half-built driver might."""

    name = "sqlkv"

    def cursor(self) -> Any:
        raise RuntimeError("driver not ready")


def test_an_engine_that_fails_is_reported_not_fatal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(ENGINE_CLASSES, "sqlkv", _BrokenEngine)
    monkeypatch.setattr(bench_sql, "engine_unavailable_reason", lambda name: None)
    status = bench_sql.run(TINY + ["--engines", "sqlkv,sqlite3", "--profile", "point_select"])
    output = capsys.readouterr().out
    assert status == 1
    assert "RuntimeError: driver not ready" in output
    assert "sqlkv: the load failed" in output
    assert "the profiled workload did not run" in output
    point_row = next(row for row in _workload_rows(output) if "point select" in row)
    assert "error" in point_row and point_row.rstrip().endswith("ERROR")
