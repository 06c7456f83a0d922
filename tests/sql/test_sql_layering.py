"""The SQL layer reads like its pipeline: a statement walks down the floors, imports run down.

At every storage-engine call made while a SELECT or an INSERT runs through the driver, the
sqlkv modules on the call stack must descend parse -> plan -> exec -> rowstore -> txn ->
storage with no module entered twice (no callback back up into the session, say). Imports
inside ``sqlkv/sql`` form no cycle and none is hidden inside a function.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import sqlkv
from sqlkv.storage import memory

SQL_DIR = Path(sqlkv.__file__).parent / "sql"

# floors, top to bottom; a module's floor is that of its longest matching prefix
FLOORS = [
    ("sqlkv.dbapi", 0),
    ("sqlkv.sql", 1),  # the session and what sits beside it: txnstate, result, plancache
    ("sqlkv.sql.parse", 2),
    ("sqlkv.sql.plan", 3),
    ("sqlkv.sql.exec", 4),
    ("sqlkv.sql.expr", 4),
    ("sqlkv.sql.rowstore", 5),
    ("sqlkv.catalog", 5),
    ("sqlkv.encoding", 6),
    ("sqlkv.txn", 7),
    ("sqlkv.storage", 8),
]
ENTRY_POINTS = {("sqlkv.dbapi.cursor", "execute"), ("sqlkv.dbapi.cursor", "fetchall"),
                ("sqlkv.dbapi.connection", "commit")}


def floor_of(module: str) -> int:
    best = max((p for p, _ in FLOORS if module == p or module.startswith(p + ".")), key=len)
    return dict(FLOORS)[best]


def modules_on_stack(frame) -> list[str]:
    """The sqlkv modules from the driver entry point down to ``frame``, consecutive repeats merged."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    mods: list[str] = []
    started = False
    for f in reversed(frames):
        mod = f.f_globals.get("__name__", "")
        started = started or (mod, f.f_code.co_name) in ENTRY_POINTS
        if started and mod.startswith("sqlkv") and (not mods or mods[-1] != mod):
            mods.append(mod)
    return mods


@pytest.fixture
def engine_stacks(monkeypatch):
    """Records the module chain of every engine read, write and snapshot (memory engine)."""
    stacks: list[tuple[str, list[str]]] = []

    def probe(cls, name):
        original = getattr(cls, name)

        def wrapper(self, *args, **kwargs):
            stacks.append((name, modules_on_stack(sys._getframe(1))))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    for name in ("get", "scan", "write", "snapshot"):
        probe(memory.MemoryEngine, name)
    for name in ("get", "scan"):
        probe(memory._MemorySnapshot, name)
    return stacks


def check_straight(stacks: list[tuple[str, list[str]]], operator_tree: bool = False) -> None:
    """Every chain descends the floors; no module is entered twice, except that a plan with
    several operators (``operator_tree``) pulls rows through exec's operators at each level."""
    assert stacks, "the statement made no engine call"
    for call, mods in stacks:
        assert mods, f"engine.{call} was not reached from the driver"
        once = [m for m in mods if not (operator_tree and m.startswith("sqlkv.sql.exec."))]
        assert len(once) == len(set(once)), f"engine.{call}: a module entered twice: {' -> '.join(mods)}"
        floors = [floor_of(m) for m in mods]
        assert floors == sorted(floors), f"engine.{call}: the walk goes back up: {' -> '.join(mods)}"


@pytest.mark.parametrize("run", ["first", "cached"])
def test_select_and_insert_walk_straight_down_to_the_engine(engine_stacks, run):
    conn = sqlkv.connect(":memory:")
    cur = conn.cursor()
    cur.execute("CREATE TABLE users (id INT PRIMARY KEY, name TEXT, age INT)")
    cur.execute("CREATE INDEX users_name ON users (name)")
    cur.execute("INSERT INTO users VALUES (1, 'ann', 30), (2, 'bob', 40)")
    conn.commit()
    if run == "cached":  # the second execution of a text takes its plan from the plan cache
        cur.execute("SELECT name FROM users WHERE id = ?", (2,)).fetchall()
        cur.execute("INSERT INTO users VALUES (?, ?, ?)", (9, "eve", 20))
        conn.commit()

    engine_stacks.clear()
    assert cur.execute("SELECT name FROM users WHERE id = ?", (1,)).fetchall() == [("ann",)]
    reads = list(engine_stacks)
    check_straight(reads)
    chains = [" -> ".join(mods) for _, mods in reads]
    # the row read by the table's codec, or decoded straight into the projection (picked.py)
    assert any("sqlkv.sql.exec.scan -> sqlkv.sql.rowstore.codec -> sqlkv.txn.transaction" in c
               or "sqlkv.sql.exec.scan -> sqlkv.sql.rowstore.picked -> sqlkv.txn.transaction" in c for c in chains)

    engine_stacks.clear()
    cur.execute("INSERT INTO users VALUES (?, ?, ?)", (10, "cy", 50))
    conn.commit()
    check_straight(engine_stacks)
    assert any(call == "write" for call, _ in engine_stacks)
    chains = [" -> ".join(mods) for _, mods in engine_stacks]
    assert any("sqlkv.sql.exec.insert -> sqlkv.sql.rowstore.writer -> sqlkv.txn.transaction" in c for c in chains)
    assert cur.execute("SELECT count(*) FROM users").fetchall() == [(4 if run == "cached" else 3,)]

    for sql, params in [("UPDATE users SET age = age + 1 WHERE name = ?", ("ann",)),
                        ("DELETE FROM users WHERE id = ?", (10,)),
                        ("SELECT u.name, v.name FROM users u JOIN users v ON v.age > u.age WHERE u.id = ?", (1,))]:
        engine_stacks.clear()
        cur.execute(sql, params)
        if cur.description:
            cur.fetchall()
        conn.commit()
        check_straight(engine_stacks, operator_tree="JOIN" in sql)
    conn.close()


def test_a_failing_statement_still_undoes_its_writes_and_names_itself():
    # the savepoint around each statement is taken and undone by the session itself now
    conn = sqlkv.connect(":memory:", autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY)")
    cur.execute("BEGIN")
    cur.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlkv.IntegrityError) as info:
        cur.execute("INSERT INTO t VALUES (2), (1)")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    cur.execute("COMMIT")
    assert cur.execute("SELECT id FROM t").fetchall() == [(1,)]
    conn.close()


def test_a_failing_autocommit_statement_changes_nothing():
    # an autocommit statement runs in a transaction of its own, without a savepoint: its
    # failure rolls that transaction back whole
    conn = sqlkv.connect(":memory:", autocommit=True)
    cur = conn.cursor()
    cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT CHECK (v > 0))")
    cur.execute("INSERT INTO t VALUES (1, 1)")
    with pytest.raises(sqlkv.IntegrityError):
        cur.execute("INSERT INTO t VALUES (2, 2), (1, 3)")
    with pytest.raises(sqlkv.IntegrityError):
        cur.execute("UPDATE t SET v = v - 1")
    with pytest.raises(sqlkv.IntegrityError):
        cur.executemany("INSERT INTO t VALUES (?, ?)", [(5, 5), (6, -6)])
    assert not conn.in_transaction
    assert cur.execute("SELECT id, v FROM t").fetchall() == [(1, 1)]
    conn.close()


def _module_name(path: Path) -> str:
    rel = path.relative_to(SQL_DIR.parent.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> tuple[set[str], list[str]]:
    """(module-level sqlkv.sql imports, function-level imports as text) of one file."""
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    hidden: list[str] = []

    def targets(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        out = []
        for a in node.names:
            full = f"{node.module}.{a.name}"
            out.append(full if full in modules else node.module)
        return out

    def walk(body, at_top: bool) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if at_top:
                    top.update(t for t in targets(node) if t in modules)
                else:
                    hidden.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                walk(node.body, at_top and isinstance(node, ast.ClassDef))
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    sub = getattr(node, field, None)
                    if isinstance(sub, list):
                        walk(sub, at_top)

    walk(tree.body, True)
    return top, hidden


def test_sql_layer_imports_have_no_cycle_and_none_hidden_in_functions():
    files = {_module_name(p): p for p in SQL_DIR.rglob("*.py")}
    graph, hidden = {}, []
    for name, path in files.items():
        graph[name], h = _imports(path, set(files))
        hidden += h
    assert hidden == []

    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_sql_layer_modules_stay_small():
    sizes = {str(p.relative_to(SQL_DIR)): len(p.read_text().splitlines()) for p in SQL_DIR.rglob("*.py")}
    assert len(sizes) > 50
    assert {p: n for p, n in sizes.items() if n > 450} == {}
