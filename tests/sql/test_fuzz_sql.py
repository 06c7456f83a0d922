"""SQL fuzzing through the driver: every statement ends in a result or a PEP 249 error that is
not InternalError, a failed statement changes nothing, and the database stays consistent.

Two sources of statements:

* a small grammar that generates expressions over every column type (huge and odd literals,
  NULLs, casts, functions, nested operators) inside SELECT / INSERT / UPDATE / DELETE, and
  schema changes that backfill or check rows (CREATE [UNIQUE] INDEX [WHERE], ADD COLUMN with a
  DEFAULT, ADD CONSTRAINT CHECK, DROP INDEX/COLUMN);
* mutations of statements from SQLite's sqllogictest corpus (``../shared/sqllogictest``; that
  half skips with a message when the corpus is absent): tokens dropped, repeated, swapped or
  replaced by extreme values and stray keywords.

A statement that fails must leave every table's definition and rows as they were. Sizes are
bounded for CI (``SQLKV_FUZZ_N`` statements per source, default 300) and scale up
for longer runs. A statement still running after ``SQLKV_FUZZ_SECONDS`` (default 10) is
interrupted and counted as a hang, which fails the test too.
"""

from __future__ import annotations

import os
import random
import re
import threading
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

import sqlkv
from sqlkv.errors import InternalError

N = int(os.environ.get("SQLKV_FUZZ_N", "300"))
SECONDS = float(os.environ.get("SQLKV_FUZZ_SECONDS", "10"))
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "sqllogictest"

COLUMNS = {"id": "INT", "i": "INT", "f": "FLOAT", "d": "DECIMAL", "s": "TEXT", "b": "BYTES",
           "dt": "DATE", "ts": "TIMESTAMP", "ok": "BOOL"}
LITERALS = ["0", "-1", "1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "99999999999999999999999999999999999999", "1e308", "-1e308", "1e-320", "0.0", "-0.0",
            "3.14159", "DECIMAL '1e30'", "DECIMAL '-0.000001'", "DECIMAL 'NaN'", "''", "'abc'",
            "'%_'", "'\u00e9\u4e2d\U0001f600'", "x''", "x'00ff'", "NULL", "TRUE", "FALSE",
            "DATE '2020-02-29'", "DATE '0001-01-01'", "DATE '9999-12-31'",
            "TIMESTAMP '2000-01-01 00:00:00'", "INTERVAL '1 day'", "INTERVAL '-3 months'", "'NaN'",
            "'1e5'", "' 12 '"]
UNARY = ["-", "+", "NOT ", "~"]
BINARY = ["+", "-", "*", "/", "%", "||", "=", "<>", "<", "<=", ">", ">=", "AND", "OR", "LIKE",
          "GLOB", "IS", "IS NOT", "&", "|", "<<", ">>"]
FUNCTIONS = {"abs": 1, "round": 2, "lower": 1, "upper": 1, "length": 1, "substr": 3,
             "coalesce": 2, "nullif": 2, "trunc": 1, "power": 2, "sqrt": 1, "ln": 1, "mod": 2,
             "replace": 3, "trim": 1, "hex": 1, "sign": 1, "floor": 1, "ceil": 1, "exp": 1,
             "concat": 2, "strpos": 2, "repeat": 2, "lpad": 2, "instr": 2, "max": 2, "min": 2}
TYPES = ["INT", "FLOAT", "DECIMAL", "DECIMAL(5,2)", "TEXT", "BYTES", "DATE", "TIMESTAMP", "BOOL",
         "VARCHAR(3)"]


def expression(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth > 4 or roll < 0.25:
        return rng.choice(LITERALS) if rng.random() < 0.5 else rng.choice(list(COLUMNS))
    if roll < 0.35:
        return f"{rng.choice(UNARY)}{expression(rng, depth + 1)}"
    if roll < 0.65:
        return f"({expression(rng, depth + 1)} {rng.choice(BINARY)} {expression(rng, depth + 1)})"
    if roll < 0.8:
        name = rng.choice(list(FUNCTIONS))
        args = ", ".join(expression(rng, depth + 1) for _ in range(FUNCTIONS[name]))
        return f"{name}({args})"
    if roll < 0.87:
        return f"CAST({expression(rng, depth + 1)} AS {rng.choice(TYPES)})"
    if roll < 0.93:
        return (f"CASE WHEN {expression(rng, depth + 1)} THEN {expression(rng, depth + 1)} "
                f"ELSE {expression(rng, depth + 1)} END")
    if roll < 0.97:
        items = ", ".join(expression(rng, depth + 1) for _ in range(rng.randint(1, 4)))
        return f"({expression(rng, depth + 1)} IN ({items}))"
    return f"({expression(rng, depth + 1)} BETWEEN {expression(rng, depth + 1)} AND {expression(rng, depth + 1)})"


TYPED = {
    "INT": (["id", "i", "0", "1", "-7", "9223372036854775807", "-9223372036854775808", "NULL"],
            ["+", "-", "*", "/", "%", "&", "|", "<<", ">>"], ["abs", "sign", "length", "mod"]),
    "FLOAT": (["f", "0.5", "-1e308", "1e308", "1e-320", "-0.0", "CAST('NaN' AS FLOAT)", "NULL"],
              ["+", "-", "*", "/"], ["abs", "round", "sqrt", "ln", "exp", "floor", "ceil", "power"]),
    "DECIMAL": (["d", "DECIMAL '1e30'", "DECIMAL '-0.000001'", "DECIMAL '12345.6789'", "NULL"],
                ["+", "-", "*", "/", "%"], ["abs", "round", "trunc", "floor", "ceil", "sign"]),
    "TEXT": (["s", "''", "'abc'", "'%_'", "'\u00e9\u4e2d'", "NULL"], ["||"],
             ["lower", "upper", "trim", "replace", "substr", "lpad", "repeat", "concat"]),
    "DATE": (["dt", "DATE '2020-02-29'", "DATE '0001-01-01'", "DATE '9999-12-31'", "NULL"],
             ["+", "-"], []),
}
_ARITY = {"mod": 2, "power": 2, "round": 2, "replace": 3, "substr": 3, "lpad": 2, "repeat": 2, "concat": 2}


def typed(rng: random.Random, kind: str, depth: int = 0) -> str:
    """An expression of one type, so that most statements get past type checking and run."""
    leaves, ops, funcs = TYPED[kind]
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice(leaves)
    if roll < 0.7 and ops:
        right = typed(rng, "INT" if kind == "DATE" else kind, depth + 1)
        if kind == "TEXT" or (kind == "INT" and rng.random() < 0.3):
            right = typed(rng, kind, depth + 1)
        return f"({typed(rng, kind, depth + 1)} {rng.choice(ops)} {right})"
    if funcs:
        name = rng.choice(funcs)
        args = [typed(rng, kind, depth + 1)]
        for _ in range(_ARITY.get(name, 1) - 1):
            args.append(typed(rng, "TEXT" if name == "replace" else "INT", depth + 1))
        return f"{name}({', '.join(args)})"
    return f"CASE WHEN {typed_predicate(rng, depth + 1)} THEN {typed(rng, kind, depth + 1)} ELSE NULL END"


def typed_predicate(rng: random.Random, depth: int = 0) -> str:
    kind = rng.choice(list(TYPED))
    roll = rng.random()
    if roll < 0.6 or depth > 2:
        op = rng.choice(["=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT"])
        return f"({typed(rng, kind, depth + 1)} {op} {typed(rng, kind, depth + 1)})"
    if roll < 0.75:
        return f"({typed_predicate(rng, depth + 1)} {rng.choice(['AND', 'OR'])} {typed_predicate(rng, depth + 1)})"
    if roll < 0.85:
        items = ", ".join(typed(rng, kind, depth + 1) for _ in range(rng.randint(1, 5)))
        return f"({typed(rng, kind, depth + 1)} {rng.choice(['IN', 'NOT IN'])} ({items}))"
    if roll < 0.92 and kind == "TEXT":
        return f"({typed(rng, kind, depth + 1)} LIKE {rng.choice(['%a%', '_', '%', 'abc'])!r})"
    return f"({typed(rng, kind, depth + 1)} BETWEEN {typed(rng, kind, depth + 1)} AND {typed(rng, kind, depth + 1)})"


def statement(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.08:
        return ddl_statement(rng)
    if roll < 0.6:
        return typed_statement(rng)
    return untyped_statement(rng)


def ddl_statement(rng: random.Random) -> str:
    """Schema changes that backfill or check existing rows (and may fail half way through)."""
    n = rng.randint(0, 5)
    kind = rng.choice(list(TYPED))
    roll = rng.random()
    if roll < 0.35:
        column = rng.choice(["i", "d", "s", "dt", "f", "ok"])
        where = f" WHERE {typed_predicate(rng, 1)}" if rng.random() < 0.5 else ""
        return f"CREATE {rng.choice(['', 'UNIQUE '])}INDEX IF NOT EXISTS fz{n} ON t ({column}){where}"
    if roll < 0.5:
        return f"DROP INDEX IF EXISTS fz{n}"
    if roll < 0.75:
        return f"ALTER TABLE t ADD COLUMN IF NOT EXISTS c{n} {kind} DEFAULT {typed(rng, kind, 2)}"
    if roll < 0.85:
        return f"ALTER TABLE t DROP COLUMN IF EXISTS c{n}"
    return f"ALTER TABLE t ADD CONSTRAINT k{n} CHECK ({typed_predicate(rng, 1)})"


def typed_statement(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        items = ", ".join(typed(rng, rng.choice(list(TYPED))) for _ in range(rng.randint(1, 3)))
        sql = f"SELECT {items} FROM t WHERE {typed_predicate(rng)}"
        if rng.random() < 0.4:
            sql += f" ORDER BY {rng.randint(1, 1 + items.count(', '))} DESC"
        if rng.random() < 0.3:
            sql += f" LIMIT {rng.randint(0, 5)} OFFSET {rng.randint(0, 3)}"
        return sql
    if roll < 0.6:
        kind = rng.choice(["INT", "DECIMAL", "TEXT"])
        return (f"SELECT {typed(rng, kind)}, count(*), min({typed(rng, kind)}), sum(i), avg(d) "
                f"FROM t WHERE {typed_predicate(rng)} GROUP BY 1 HAVING count(*) > {rng.randint(0, 2)}")
    if roll < 0.75:
        return (f"INSERT INTO t (id, i, d, s, dt) VALUES ({typed(rng, 'INT', 2)}, {typed(rng, 'INT', 2)}, "
                f"{typed(rng, 'DECIMAL', 2)}, {typed(rng, 'TEXT', 2)}, {typed(rng, 'DATE', 2)})"
                + rng.choice(["", " ON CONFLICT (id) DO NOTHING",
                              " ON CONFLICT (id) DO UPDATE SET i = excluded.i + 1"]))
    if roll < 0.9:
        column, kind = rng.choice([("i", "INT"), ("d", "DECIMAL"), ("s", "TEXT"), ("dt", "DATE"), ("id", "INT")])
        return f"UPDATE t SET {column} = {typed(rng, kind, 1)} WHERE {typed_predicate(rng, 1)}"
    return f"DELETE FROM t WHERE {typed_predicate(rng, 1)}"


def untyped_statement(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        items = ", ".join(expression(rng) for _ in range(rng.randint(1, 3)))
        sql = f"SELECT {items} FROM t"
        if rng.random() < 0.6:
            sql += f" WHERE {expression(rng)}"
        if rng.random() < 0.3:
            sql += f" ORDER BY {rng.choice(['1', expression(rng)])}"
        if rng.random() < 0.3:
            sql += f" LIMIT {rng.choice(['0', '1', '5', '-1', '9223372036854775807', '?'])}"
        return sql
    if roll < 0.6:
        return (f"SELECT {expression(rng)}, count(*), sum({rng.choice(list(COLUMNS))}), "
                f"max({expression(rng)}) FROM t GROUP BY 1")
    if roll < 0.75:
        values = ", ".join(expression(rng, 3) for _ in COLUMNS)
        return f"INSERT INTO t VALUES ({values})"
    if roll < 0.9:
        column = rng.choice([c for c in COLUMNS if c != "id"] + ["id"])
        return f"UPDATE t SET {column} = {expression(rng, 2)} WHERE {expression(rng, 2)}"
    return f"DELETE FROM t WHERE {expression(rng, 2)}"


def _open() -> sqlkv.Connection:
    conn = sqlkv.connect(":memory:", autocommit=True, check_same_thread=False)
    conn.execute("CREATE TABLE t (id INT PRIMARY KEY, i INT, f FLOAT, d DECIMAL, s TEXT, b BYTES, "
                 "dt DATE, ts TIMESTAMP, ok BOOL)")
    conn.execute("CREATE UNIQUE INDEX t_s ON t (s)")
    conn.execute("CREATE INDEX t_i ON t (i, f)")
    conn.execute("CREATE INDEX t_dt ON t (dt) WHERE ok")
    rng = random.Random(0)
    import datetime as dt
    for k in range(30):
        conn.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (
            k, rng.choice([None, k % 7, -k]), rng.choice([None, k / 3, float(k)]),
            rng.choice([None, Decimal(k) / 8]), rng.choice([None, f"s{k}"]), bytes([k]),
            dt.date(2020, 1 + k % 12, 1 + k % 28), dt.datetime(2021, 1, 1, k % 24),
            rng.choice([None, True, False])))
    return conn


def database_state(conn: sqlkv.Connection) -> list:
    """Every table's definition and rows (sorted by their text: any column types)."""
    names = [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "ORDER BY 1").fetchall()]
    state = []
    for name in names:
        state.append(conn.execute(f'SHOW CREATE TABLE "{name}"').fetchall())
        state.append(sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"').fetchall())))
    return state


class Outcomes:
    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.bugs: list[str] = []

    def run(self, conn: sqlkv.Connection, sql: str, snapshot: bool) -> None:
        before = database_state(conn) if snapshot else None
        timer = threading.Timer(SECONDS, conn.interrupt)
        timer.start()
        try:
            cur = conn.execute(sql, (3,) if sql.count("?") == 1 else ())
            if cur.description is not None:
                cur.fetchall()
            self.counts["result"] += 1
        except InternalError as exc:
            self.bugs.append(f"InternalError: {sql[:300]} -> {exc}")
        except sqlkv.OperationalError as exc:
            if "cancelled" in str(exc):
                self.bugs.append(f"hang (> {SECONDS} s): {sql[:300]}")
            self.counts["OperationalError"] += 1
        except sqlkv.Error as exc:
            self.counts[type(exc).__name__] += 1
            if before is not None and database_state(conn) != before:
                self.bugs.append(f"failed statement changed the database: {sql[:300]}")
        except Exception as exc:  # noqa: BLE001 - any non-PEP-249 exception is the bug sought
            self.bugs.append(f"{type(exc).__name__} escaped: {sql[:300]} -> {exc}")
        finally:
            timer.cancel()

    def finish(self, conn: sqlkv.Connection, label: str) -> None:
        problems = conn.execute("CHECK DATABASE").fetchall()
        print(f"\nfuzz {label}: {sum(self.counts.values()) + len(self.bugs)} statements, "
              f"{dict(self.counts)}, bugs {len(self.bugs)}")
        assert not problems, problems
        assert not self.bugs, "\n".join(self.bugs[:20])


@pytest.mark.parametrize("seed", range(1, 1 + int(os.environ.get("SQLKV_FUZZ_SEEDS", "2"))))
def test_grammar_fuzz(seed):
    rng = random.Random(seed)
    conn = _open()
    outcomes = Outcomes()
    for _ in range(N // 2):
        sql = statement(rng)
        outcomes.run(conn, sql, snapshot=not sql.startswith("SELECT"))
    outcomes.finish(conn, f"grammar seed {seed}")
    conn.close()


def _corpus_records(path: Path) -> list[tuple[str, str]]:
    """(kind, sql) for each record of a sqllogictest file: kind 'statement' or 'query'."""
    records = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = [line for line in block.strip().splitlines() if not line.startswith("#")]
        if not lines or not lines[0].startswith(("statement", "query")):
            continue
        sql_lines = []
        for line in lines[1:]:
            if line.startswith("----"):
                break
            sql_lines.append(line)
        records.append((lines[0].split()[0], "\n".join(sql_lines)))
    return records


_TOKEN = re.compile(r"'[^']*'|\w+|<=|>=|<>|!=|\|\||\S")
_EXTREMES = ["9223372036854775808", "-9223372036854775809", "1e309", "NULL", "''", "x''",
             "DECIMAL '1e30'", "(", ")", ",", "SELECT", "FROM", "WHERE", "NOT", "*", "ALL",
             "DISTINCT", "CAST(1 AS TEXT)", "0", "-0.0", "'\\'", "?"]


_EXTREME_VALUES = ["9223372036854775808", "-9223372036854775808", "1e309", "-1e308", "NULL", "''",
                   "x''", "DECIMAL '1e30'", "DECIMAL 'NaN'", "0", "-0.0", "'\u00e9'", "?",
                   "CAST(NULL AS INT)", "(SELECT NULL)", "9" * 400, "DATE '9999-12-31'"]
_LITERAL = re.compile(r"'[^']*'|\d+(\.\d*)?")


def mutate(sql: str, rng: random.Random) -> str:
    """Half the time only literals change (the statement still parses and runs against odd
    values); otherwise tokens are dropped, repeated, swapped or replaced."""
    tokens = _TOKEN.findall(sql)
    literals = [i for i, t in enumerate(tokens) if _LITERAL.fullmatch(t)]
    if literals and rng.random() < 0.5:
        for i in rng.sample(literals, min(len(literals), rng.randint(1, 3))):
            tokens[i] = rng.choice(_EXTREME_VALUES)
        return " ".join(tokens)
    for _ in range(rng.randint(1, 3)):
        if not tokens:
            break
        i = rng.randrange(len(tokens))
        action = rng.random()
        if action < 0.3:
            del tokens[i]
        elif action < 0.5:
            tokens.insert(i, tokens[i])
        elif action < 0.7:
            j = rng.randrange(len(tokens))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        else:
            tokens[i] = rng.choice(_EXTREMES)
    return " ".join(tokens)


def test_mutation_fuzz_of_the_sqllogictest_corpus():
    files = sorted(CORPUS.glob("select*.test")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip(f"sqllogictest corpus not found at {CORPUS}")
    rng = random.Random(3)
    outcomes = Outcomes()
    per_file = max(1, N // len(files))
    for path in files:
        records = _corpus_records(path)
        conn = sqlkv.connect(":memory:", autocommit=True, check_same_thread=False)
        setup = [sql for kind, sql in records if kind == "statement"][:60]
        for sql in setup:
            try:
                conn.execute(sql)
            except sqlkv.Error:
                pass
        queries = [sql for kind, sql in records if kind == "query"] or setup
        for _ in range(per_file):
            sql = mutate(rng.choice(queries + setup[:5]), rng)
            outcomes.run(conn, sql, snapshot=not sql.lstrip().upper().startswith("SELECT"))
        outcomes.finish(conn, f"mutations of {path.name}")
        outcomes = Outcomes()
        conn.close()
