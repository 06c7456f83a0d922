"""Micro-benchmark of compiled expressions: ``sqlkv bench expr [--rows N]``.

Evaluates ``a + b * 2 > 10 AND c LIKE 'x%'`` (as an expression and as a WHERE predicate) over
generated rows with some NULLs and prints microseconds per row, next to a hand-written Python
lambda doing the same work as the floor to compare against.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import sqlglot

from sqlkv.cli.progress import progress
from sqlkv.sql.context import Column, ExecContext, Scope
from sqlkv.sql.expr import CompileEnv, compile_expr, compile_predicate
from sqlkv.sql.types import INT, TEXT

EXPRESSIONS = [
    "a + b * 2 > 10 AND c LIKE 'x%'",
    "a = 5",
    "a BETWEEN 10 AND 20 OR b IN (1, 2, 3)",
    "COALESCE(a, 0) + CASE WHEN b > 50 THEN 1 ELSE 0 END",
]


def make_rows(n: int) -> list[tuple]:
    rng = random.Random(7)
    words = ["xray", "alpha", "xeno", "beta", None]
    return [
        (rng.randint(0, 100) if rng.random() > 0.05 else None, rng.randint(0, 100), rng.choice(words))
        for _ in range(n)
    ]


def time_per_row(fn, rows: list[tuple], repeats: int = 3) -> float:
    """Best of ``repeats`` passes in CPU time (the machine is shared: this is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for r in rows:
            fn(r)
        best = min(best, time.process_time() - start)
    return best / len(rows) * 1e6


def _time_expression(text: str, rows: list[tuple], scope: Scope, env: CompileEnv) -> None:
    node = sqlglot.parse_one(f"SELECT {text}").expressions[0]
    expr_us = time_per_row(compile_expr(node, scope, env), rows)
    line = f"{text:<55} expr {expr_us:.3f} us/row"
    if text != EXPRESSIONS[-1]:
        line += f"   predicate {time_per_row(compile_predicate(node, scope, env), rows):.3f} us/row"
    print(line)  # above the bar: stdout is patched while it is up


def main(n: int = 1_000_000) -> None:
    rows = make_rows(n)
    scope = Scope([Column("a", "t", INT), Column("b", "t", INT), Column("c", "t", TEXT)])
    env = CompileEnv(ExecContext())
    with progress("sqlkv bench expr") as bar:  # on stderr, when it is a terminal
        for text in bar(EXPRESSIONS, total=len(EXPRESSIONS), label="expressions"):
            _time_expression(text, rows, scope, env)

    def by_hand(r: tuple) -> bool:
        a, b, c = r
        return a is not None and a + b * 2 > 10 and c is not None and c.startswith("x")

    print(f"{'hand-written Python for the first predicate':<55} {time_per_row(by_hand, rows):.3f} us/row")


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sqlkv bench expr", description="CPU time per row of compiled expressions")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows evaluated per expression (default 1000000)")
    args = parser.parse_args(argv)
    main(args.rows)
    return 0


if __name__ == "__main__":
    sys.exit(run())
