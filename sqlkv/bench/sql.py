"""``sqlkv bench sql``: the same SQL workloads on sqlkv, sqlite3 and DuckDB, timed in one process.

One run, e.g. ``run(["--scale", "100000", "--only", "point_select"])``:

1. `run` parses the options and opens every engine on a file-backed database in its own
   temporary directory (sqlite3: WAL journal, synchronous FULL or NORMAL to match sqlkv's
   ``--durability``; sqlkv: ``sqlkv.connect(dir, durability=...)`` on its LSM engine).
2. The load (workload 1, bulk insert) always runs first: every other workload needs its rows.
3. For each selected workload, `_run_workload` runs it on each engine in turn -- only the
   database calls timed, best of ``--repeat`` -- then normalises the answers and compares
   every engine's with sqlite3's (sql_report.py), and prints one aligned table row:
   each engine's time, sqlkv/sqlite3 and sqlkv/duckdb ratios, and ok / MISMATCH / ERROR.
4. At the end it prints the details of any mismatch or error, the geometric mean of the
   sqlkv/sqlite3 ratios and, with ``--profile``, the profile of that workload on sqlkv.

The exit status is 0 when every engine answered every workload identically, 1 otherwise, 2 for
bad options. The workloads themselves are in sql_workloads.py, the data in sql_data.py.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlkv.bench.sql_data import Dataset
from sqlkv.bench.sql_engines import (
    DURABILITIES,
    ENGINE_CLASSES,
    BenchEngine,
    default_engine_names,
    engine_unavailable_reason,
)
from sqlkv.bench.sql_report import (
    ResultTable,
    WorkloadOutcome,
    engine_versions,
    first_difference,
    normalize_answer,
    summary_lines,
)
from sqlkv.bench.sql_timing import CLOCKS, Profiler, Stopwatch
from sqlkv.bench.sql_workloads import WORKLOADS, WORKLOADS_BY_NAME, Workload
from sqlkv.cli.progress import progress


@dataclass
class BenchOptions:
    """The parsed command line."""

    scale: int
    durability: str
    engines: list[str]
    workloads: list[Workload]
    repeat: int
    profile: str | None
    profile_engine: str
    seed: int
    clock: str


@dataclass
class BenchRun:
    """The state of one run: open engines, which failed to load, the profiler, the outcomes."""

    options: BenchOptions
    data: Dataset
    engines: list[BenchEngine]
    profiler: Profiler | None
    broken: dict[str, str] = field(default_factory=dict)  # engine -> why it can't continue
    outcomes: list[WorkloadOutcome] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    names = ", ".join(w.name for w in WORKLOADS)
    parser = argparse.ArgumentParser(
        prog="sqlkv bench sql",
        description="Run the same SQL workloads on sqlkv, sqlite3 and DuckDB (when installed), "
        "check they all return the same answers, and compare their times.",
    )
    parser.add_argument("--scale", type=int, default=100_000,
                        help="rows in the orders table (default 100000)")
    parser.add_argument("--durability", choices=DURABILITIES, default="full",
                        help="full: fsync every commit (sqlite synchronous=FULL); normal: "
                        "sqlkv durability=normal, sqlite synchronous=NORMAL (default full)")
    parser.add_argument("--engines", default=None,
                        help=f"comma-separated, from {', '.join(ENGINE_CLASSES)} "
                        "(default: all that are available)")
    parser.add_argument("--only", default=None,
                        help=f"comma-separated workloads (names or numbers 1-{len(WORKLOADS)}): {names}")
    parser.add_argument("--profile", default=None, metavar="WORKLOAD",
                        help="profile this workload (cProfile top 30 cumulative, top 20 own time; pyinstrument "
                        "too if installed); implies --only WORKLOAD unless --only is given")
    parser.add_argument("--profile-engine", default="sqlkv",
                        help="the engine --profile profiles (default sqlkv)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each workload this many times and report the best (default 1)")
    parser.add_argument("--clock", choices=CLOCKS, default="wall",
                        help="wall: elapsed time (default); cpu: this process's CPU time, steadier "
                        "on a busy machine but blind to fsync waits")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated data and keys")
    return parser


def parse_options(argv: list[str] | None) -> BenchOptions:
    """Parse and validate; raises SystemExit(2) with a message on bad options."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.scale < 1:
        parser.error("--scale must be at least 1")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    engines = _parse_engines(parser, args.engines)
    profile = None
    if args.profile is not None:
        profile = _parse_workloads(parser, args.profile)[0].name
        if args.profile_engine not in engines:
            parser.error(f"--profile-engine {args.profile_engine} is not among the engines run")
    only = args.only if args.only is not None else profile
    selected = {w.name for w in _parse_workloads(parser, only)} if only else None
    if profile is not None and selected is not None and profile not in selected:
        parser.error(f"--profile {profile} is not among the --only workloads")
    # The load always runs: every other workload reads or changes its rows.
    workloads = [
        w for w in WORKLOADS
        if selected is None or w.name in selected or w.name == "bulk_insert"
    ]
    return BenchOptions(args.scale, args.durability, engines, workloads, args.repeat,
                        profile, args.profile_engine, args.seed, args.clock)


def _parse_engines(parser: argparse.ArgumentParser, text: str | None) -> list[str]:
    if text is None:
        return default_engine_names()
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        parser.error("--engines names no engine")
    for name in names:
        reason = engine_unavailable_reason(name)
        if reason is not None:
            parser.error(f"--engines: {reason}")
    return list(dict.fromkeys(names))


def _parse_workloads(parser: argparse.ArgumentParser, text: str) -> list[Workload]:
    chosen = []
    for item in (part.strip() for part in text.split(",")):
        if item.isdigit() and 1 <= int(item) <= len(WORKLOADS):
            chosen.append(WORKLOADS[int(item) - 1])
        elif item in WORKLOADS_BY_NAME:
            chosen.append(WORKLOADS_BY_NAME[item])
        else:
            parser.error(f"unknown workload {item!r}; choose from "
                         f"{', '.join(w.name for w in WORKLOADS)} or 1-{len(WORKLOADS)}")
    return chosen


def run(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; 0 if all engines agreed, 1 if not, 2 on bad options."""
    try:
        options = parse_options(argv)
    except SystemExit as exit_request:
        return int(exit_request.code or 0)
    data = Dataset(options.scale, options.seed)
    with tempfile.TemporaryDirectory(prefix="sqlkv-bench-") as workdir:
        engines = [
            ENGINE_CLASSES[name](Path(workdir) / name, options.durability) for name in options.engines
        ]
        bench = BenchRun(options, data, engines, Profiler() if options.profile else None)
        try:
            _open_engines(bench)
            _print_header(bench)
            _run_all(bench)
        finally:
            for engine in engines:
                _close_quietly(engine)
    return _print_footer(bench)


def _open_engines(bench: BenchRun) -> None:
    for engine in bench.engines:
        try:
            engine.connect()
        except Exception as error:  # noqa: BLE001 - any failure is reported, the run goes on
            bench.broken[engine.name] = f"could not open: {_describe(error)}"


def _print_header(bench: BenchRun) -> None:
    options, data = bench.options, bench.data
    print(f"sqlkv bench sql: orders {data.scale:,} rows, customers {data.customers:,} rows, "
          f"durability {options.durability}, best of {options.repeat}, seed {options.seed}, "
          f"{options.clock} clock")
    print(f"engines: {engine_versions(bench.engines)}; python {sys.version.split()[0]}")
    print("times cover only the database calls; every engine's answers are compared with "
          f"{_reference_engine(options.engines)}'s")
    print()
    print(ResultTable(options.engines).header())


def _run_all(bench: BenchRun) -> None:
    table = ResultTable(bench.options.engines)
    workloads = bench.options.workloads
    with progress("sqlkv bench sql") as bar:  # on stderr, when it is a terminal
        for workload in bar(workloads, total=len(workloads), label="workloads"):
            outcome = _run_workload(bench, workload)
            bench.outcomes.append(outcome)
            print(table.row(outcome), flush=True)  # above the bar (stdout is patched meanwhile)


def _run_workload(bench: BenchRun, workload: Workload) -> WorkloadOutcome:
    options, data = bench.options, bench.data
    repeats = options.repeat if workload.repeatable else 1
    count = workload.count(data)
    operations = f"{count:,} {workload.unit}" + (f" x{repeats}" if repeats > 1 else "")
    outcome = WorkloadOutcome(WORKLOADS.index(workload) + 1, workload.title, operations)
    answers: dict[str, list[Any]] = {}
    for engine in bench.engines:
        if engine.name in bench.broken:
            outcome.errors[engine.name] = f"skipped: {bench.broken[engine.name]}"
            continue
        profiled = options.profile == workload.name and options.profile_engine == engine.name
        outcome.profiled = outcome.profiled or profiled
        result = _run_on_engine(bench, workload, engine, repeats, profiled)
        if isinstance(result, str):
            outcome.errors[engine.name] = result
            if workload.name == "bulk_insert":
                bench.broken[engine.name] = "the load failed"
            continue
        outcome.seconds[engine.name], answers[engine.name] = result
    _compare(outcome, answers, options.engines)
    return outcome


def _run_on_engine(
    bench: BenchRun, workload: Workload, engine: BenchEngine, repeats: int, profiled: bool
) -> tuple[float, list[Any]] | str:
    """(best seconds, normalised answers incl. check queries), or the error text."""
    best = float("inf")
    answers: list[Any] = []
    try:
        for rep in range(repeats):
            # Each timed part starts from a collected heap, so the garbage collector's passes over
            # objects an earlier workload (or engine) left behind land outside the timing.
            gc.collect()
            watch = Stopwatch(bench.profiler if profiled else None, bench.options.clock)
            produced = workload.run(engine, bench.data, watch, rep)
            best = min(best, watch.seconds)
            if workload.writes or rep == 0:
                answers.extend(normalize_answer(a, workload.unordered_rows) for a in produced)
        cursor = engine.cursor()
        for sql in workload.check:
            cursor.execute(sql)
            answers.append(("check", sql, normalize_answer(cursor.fetchall(), False)))
    except Exception as error:  # noqa: BLE001 - an engine's failure is a result, not a crash
        _rollback_quietly(engine)
        return _describe(error)
    finally:
        if profiled and bench.profiler is not None:
            bench.profiler.finish()
    return best, answers


def _compare(outcome: WorkloadOutcome, answers: dict[str, list[Any]], engines: list[str]) -> None:
    reference = _reference_engine([name for name in engines if name in answers])
    if reference is None:
        return
    for name, answer in answers.items():
        if name == reference:
            continue
        difference = first_difference(answers[reference], answer)
        if difference is not None:
            outcome.mismatches.append(f"{name} vs {reference}: {difference}")


def _reference_engine(engines: list[str]) -> str | None:
    """sqlite3 is the oracle when it ran; otherwise the first engine listed."""
    if "sqlite3" in engines:
        return "sqlite3"
    return engines[0] if engines else None


def _print_footer(bench: BenchRun) -> int:
    failed = False
    print()
    for outcome in bench.outcomes:
        for engine, error in outcome.errors.items():
            if not error.startswith("skipped: "):
                print(f"ERROR in {outcome.title!r} on {engine}: {error}")
            failed = True
        for mismatch in outcome.mismatches:
            print(f"RESULT MISMATCH in {outcome.title!r}: {mismatch}")
            failed = True
    for engine, reason in bench.broken.items():
        print(f"{engine}: {reason}")
        failed = True
    for line in summary_lines(bench.outcomes, bench.options.engines):
        print(line)
    if bench.profiler is not None:
        print()
        print(f"profile of {bench.options.profile} on {bench.options.profile_engine} "
              "(timed blocks only; profiling inflates its time, excluded from the mean):")
        print(bench.profiler.report(30))
    print("FAILED: engines disagreed or errored, see above" if failed else "all engines agreed")
    return 1 if failed else 0


def _describe(error: BaseException) -> str:
    """``Type: message (at file:line in function)``, naming the innermost frame."""
    frames = traceback.extract_tb(error.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"
    return f"{type(error).__name__}: {error}{where}"


def _rollback_quietly(engine: BenchEngine) -> None:
    try:
        if engine.connection is not None:
            engine.rollback()
    except Exception:  # noqa: BLE001 - the original error is what gets reported
        pass


def _close_quietly(engine: BenchEngine) -> None:
    try:
        engine.shutdown()
    except Exception:  # noqa: BLE001 - closing after a failure must not hide the report
        engine.connection = None


if __name__ == "__main__":
    sys.exit(run())
