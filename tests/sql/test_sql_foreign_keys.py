"""FOREIGN KEY: declaration, checks, ON DELETE/UPDATE actions, DDL around them, concurrency.

sqlite3 with ``PRAGMA foreign_keys=ON`` is the oracle where it agrees with PostgreSQL
(single-statement checks at the end of each statement, NO ACTION / CASCADE / SET NULL /
SET DEFAULT); the error texts, RESTRICT, DROP ... CASCADE and the serializable race are
checked against hand-computed expectations (PostgreSQL's messages and SQLSTATE 23503).
"""

from __future__ import annotations

import random
import sqlite3
import threading

import pytest

from sqlkv.errors import (
    DependentObjectsStillExist,
    ForeignKeyViolation,
    IntegrityError,
    InvalidForeignKey,
    NotSupportedError,
    ProgrammingError,
    SerializationFailure,
    UndefinedTable,
)
from sqlkv.sql.session import Database, Session
from tests.sql.core_support import open_db, rows, same_write_outcome


@pytest.fixture
def s(tmp_path):
    db = Database.open(":memory:")
    yield Session(db)
    db.close()


def run(s: Session, *sqls: str) -> None:
    for sql in sqls:
        s.execute(sql)


# -- against sqlite3 ---------------------------------------------------------------------------

ORACLE_SCHEMA = [
    "CREATE TABLE p (id INT PRIMARY KEY, u INT UNIQUE, name TEXT)",
    "CREATE TABLE c1 (id INT PRIMARY KEY, pid INT DEFAULT 1 REFERENCES p (id) ON DELETE CASCADE ON UPDATE CASCADE)",
    "CREATE TABLE c2 (id INT PRIMARY KEY, pid INT REFERENCES p (id) ON DELETE SET NULL ON UPDATE SET NULL)",
    "CREATE TABLE c3 (id INT PRIMARY KEY, pu INT DEFAULT 1 REFERENCES p (u) ON DELETE SET DEFAULT)",
    "CREATE TABLE c4 (id INT PRIMARY KEY, pid INT REFERENCES p (id))",  # NO ACTION
    "CREATE TABLE g (id INT PRIMARY KEY, cid INT REFERENCES c1 (id) ON DELETE CASCADE ON UPDATE CASCADE)",
]
TABLES = ["p", "c1", "c2", "c3", "c4", "g"]


def _random_statement(rng: random.Random) -> str:
    k = rng.randrange(1, 8)
    v = rng.randrange(1, 8)
    return rng.choice([
        f"INSERT INTO p VALUES ({k}, {k * 10 + rng.randrange(2)}, 'n{k}')",
        f"INSERT OR REPLACE INTO p VALUES ({k}, {v * 10}, 'r{k}')",  # the deleted row's ON DELETE runs
        f"INSERT INTO c1 VALUES ({rng.randrange(100)}, {v})",
        f"INSERT INTO c1 (id) VALUES ({rng.randrange(100)})",
        f"INSERT INTO c2 VALUES ({rng.randrange(100)}, {v})",
        f"INSERT INTO c3 VALUES ({rng.randrange(100)}, {v * 10})",
        f"INSERT INTO c4 VALUES ({rng.randrange(100)}, {rng.choice([v, 'NULL'])})",
        f"INSERT INTO g VALUES ({rng.randrange(100)}, {rng.randrange(100)})",
        f"DELETE FROM p WHERE id = {k}",
        f"DELETE FROM p WHERE id > {k}",
        f"UPDATE p SET id = {v} WHERE id = {k}",
        f"UPDATE p SET id = id + 10 WHERE id < {k}",
        f"UPDATE p SET u = {v * 10} WHERE id = {k}",
        f"UPDATE c1 SET pid = {v} WHERE id < {rng.randrange(100)}",
        f"UPDATE c4 SET pid = NULL WHERE pid = {k}",
        f"DELETE FROM c1 WHERE id < {rng.randrange(100)}",
        f"DELETE FROM c4 WHERE pid = {k}",
    ])


def _dump(fetch) -> list:
    return [sorted(fetch(f"SELECT * FROM {t}")) for t in TABLES]


@pytest.mark.parametrize("seed", range(6))
def test_random_statements_match_sqlite(s, seed):
    lite = sqlite3.connect(":memory:", isolation_level=None)
    lite.execute("PRAGMA foreign_keys=ON")
    for sql in ORACLE_SCHEMA:
        lite.execute(sql)
        s.execute(sql)
    rng = random.Random(seed)
    agreed = failed = 0
    for _ in range(250):
        sql = _random_statement(rng)
        ok = same_write_outcome(s, lite, sql)
        failed += not ok
        assert _dump(lambda q: rows(s, q)) == _dump(lambda q: lite.execute(q).fetchall()), sql
        agreed += 1
    assert failed > 10 and agreed - failed > 50  # both outcomes were exercised


# -- messages, declarations ------------------------------------------------------------------


def test_violation_messages_name_constraint_table_and_key(s):
    run(s, "CREATE TABLE parent (id INT PRIMARY KEY)", "CREATE TABLE child (id INT PRIMARY KEY, pid INT REFERENCES parent)",
        "INSERT INTO parent VALUES (1)", "INSERT INTO child VALUES (1, 1)")
    with pytest.raises(ForeignKeyViolation) as e:
        s.execute("INSERT INTO child VALUES (2, 7)")
    assert str(e.value) == ('insert or update on table "child" violates foreign key constraint "child_pid_fkey" '
                            '(Key (pid)=(7) is not present in table "parent") (SQLSTATE 23503)')
    assert e.value.sqlstate == "23503" and isinstance(e.value, IntegrityError)
    with pytest.raises(ForeignKeyViolation) as e:
        s.execute("DELETE FROM parent WHERE id = 1")
    assert str(e.value).startswith('update or delete on table "parent" violates foreign key constraint '
                                   '"child_pid_fkey" on table "child" (Key (id)=(1) is still referenced from '
                                   'table "child")')
    with pytest.raises(ForeignKeyViolation):
        s.execute("UPDATE child SET pid = 2")
    assert rows(s, "SELECT * FROM child") == [(1, 1)]
    assert rows(s, "SELECT * FROM parent") == [(1,)]


def test_every_row_written_with_a_missing_key_is_checked(s):
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p, u TEXT UNIQUE)")
    lite = sqlite3.connect(":memory:")
    lite.execute("PRAGMA foreign_keys=ON")
    lite.execute("CREATE TABLE p (id INT PRIMARY KEY)")
    lite.execute("CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p, u TEXT UNIQUE)")
    # the second row replaces the first (same u): the orphan left is the second one
    sql = "INSERT OR REPLACE INTO c VALUES (1, 7, 'x'), (2, 7, 'x')"
    assert not same_write_outcome(s, lite, sql)
    assert rows(s, "SELECT count(*) FROM c") == [(0,)]


def test_composite_key_and_unique_target(s):
    run(s, "CREATE TABLE p (a INT, b TEXT, code TEXT UNIQUE, PRIMARY KEY (a, b))",
        "CREATE TABLE c (id INT PRIMARY KEY, x TEXT, y INT, code TEXT REFERENCES p (code),"
        " CONSTRAINT c_xy FOREIGN KEY (y, x) REFERENCES p (a, b) ON DELETE CASCADE)",
        "INSERT INTO p VALUES (1, 'one', 'A'), (2, 'two', 'B')",
        "INSERT INTO c VALUES (1, 'one', 1, 'B'), (2, 'two', 2, NULL), (3, NULL, 9, NULL)")  # NULL: no check
    with pytest.raises(ForeignKeyViolation, match=r'"c_xy" \(Key \(y, x\)=\(2, one\) is not present'):
        s.execute("INSERT INTO c VALUES (4, 'one', 2, NULL)")
    with pytest.raises(ForeignKeyViolation, match="c_code_fkey"):
        s.execute("INSERT INTO c VALUES (4, NULL, NULL, 'Z')")
    s.execute("DELETE FROM p WHERE a = 1 AND b = 'one'")
    assert rows(s, "SELECT id FROM c ORDER BY id") == [(2,), (3,)]
    s.execute("INSERT INTO c VALUES (5, NULL, NULL, 'B')")
    with pytest.raises(ForeignKeyViolation, match='"c_code_fkey" on table "c"'):
        s.execute("DELETE FROM p WHERE code = 'B'")  # NO ACTION on code, though c_xy would cascade row 2
    s.execute("DELETE FROM c WHERE id = 5")
    s.execute("DELETE FROM p WHERE code = 'B'")
    assert rows(s, "SELECT id FROM c") == [(3,)]


def test_composite_on_update_cascade_of_the_primary_key_and_set_default_without_parent(s):
    run(s, "CREATE TABLE p (a INT, b INT, PRIMARY KEY (a, b))",
        "CREATE TABLE c (id INT PRIMARY KEY, x INT DEFAULT 0, y INT DEFAULT 0,"
        " FOREIGN KEY (x, y) REFERENCES p ON UPDATE CASCADE ON DELETE SET DEFAULT)",
        "CREATE TABLE g (id INT PRIMARY KEY, cx INT, cy INT REFERENCES c ON UPDATE CASCADE)",
        "INSERT INTO p VALUES (1, 1), (2, 2)", "INSERT INTO c VALUES (1, 1, 1), (2, 2, 2), (3, 2, NULL)",
        "INSERT INTO g VALUES (10, NULL, 1)")
    s.execute("UPDATE p SET b = b + 10")  # every referencing (x, y) follows; (2, NULL) references nothing
    assert rows(s, "SELECT * FROM c ORDER BY id") == [(1, 1, 11), (2, 2, 12), (3, 2, None)]
    with pytest.raises(ForeignKeyViolation, match=r'"c_x_y_fkey" \(Key \(x, y\)=\(0, 0\) is not present in table "p"'):
        s.execute("DELETE FROM p WHERE a = 1")  # SET DEFAULT gives (0, 0), which has no parent
    assert rows(s, "SELECT count(*) FROM p") == [(2,)]
    s.execute("INSERT INTO p VALUES (0, 0)")
    s.execute("DELETE FROM p WHERE a = 1")
    assert rows(s, "SELECT * FROM c ORDER BY id") == [(1, 0, 0), (2, 2, 12), (3, 2, None)]


def test_declaration_errors(s):
    run(s, "CREATE TABLE p (id INT PRIMARY KEY, t TEXT, n INT)", "CREATE TABLE nopk (a INT)")
    with pytest.raises(UndefinedTable, match='"missing"'):
        s.execute("CREATE TABLE c (x INT REFERENCES missing)")
    with pytest.raises(InvalidForeignKey, match="no unique constraint matching given keys"):
        s.execute("CREATE TABLE c (x INT REFERENCES p (n))")
    with pytest.raises(InvalidForeignKey, match="incompatible types"):
        s.execute("CREATE TABLE c (x TEXT REFERENCES p)")
    with pytest.raises(InvalidForeignKey, match="disagree"):
        s.execute("CREATE TABLE c (x INT, y INT, FOREIGN KEY (x, y) REFERENCES p)")
    with pytest.raises(InvalidForeignKey, match="no primary key"):
        s.execute("CREATE TABLE c (x INT REFERENCES nopk)")
    with pytest.raises(NotSupportedError, match="MATCH FULL"):
        s.execute("CREATE TABLE c (x INT REFERENCES p MATCH FULL)")
    with pytest.raises(InvalidForeignKey, match='SET NULL cascading action on column "c.x" which has a NOT NULL'):
        s.execute("CREATE TABLE c (x INT NOT NULL REFERENCES p ON DELETE SET NULL)")
    assert rows(s, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'c'") == [(0,)]


def test_deferrable_refused_immediate_timing_accepted(s):
    # sqlkv checks at the end of each statement: what NOT DEFERRABLE / INITIALLY IMMEDIATE name
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)")
    for clause in ("DEFERRABLE", "DEFERRABLE INITIALLY DEFERRED", "DEFERRABLE INITIALLY IMMEDIATE",
                   "INITIALLY DEFERRED", "NOT DEFERRABLE INITIALLY DEFERRED"):
        with pytest.raises(NotSupportedError, match="DEFERR"):
            s.execute(f"CREATE TABLE c (x INT REFERENCES p {clause})")
        with pytest.raises(NotSupportedError, match="DEFERR"):
            s.execute(f"CREATE TABLE c (x INT, FOREIGN KEY (x) REFERENCES p {clause})")
    with pytest.raises(NotSupportedError):
        s.execute("SET CONSTRAINTS ALL DEFERRED")
    run(s, "CREATE TABLE c1 (x INT REFERENCES p NOT DEFERRABLE)",
        "CREATE TABLE c2 (x INT, FOREIGN KEY (x) REFERENCES p NOT DEFERRABLE INITIALLY IMMEDIATE ON DELETE CASCADE)",
        "CREATE TABLE c3 (x INT REFERENCES p INITIALLY IMMEDIATE)",
        "CREATE TABLE c4 (x INT)",
        "ALTER TABLE c4 ADD CONSTRAINT c4_fk FOREIGN KEY (x) REFERENCES p NOT DEFERRABLE")
    for child in ("c1", "c2", "c3", "c4"):
        with pytest.raises(ForeignKeyViolation):
            s.execute(f"INSERT INTO {child} VALUES (7)")
    assert rows(s, "SELECT table_name, delete_rule FROM information_schema.referential_constraints "
                   "ORDER BY table_name") == [("c1", "NO ACTION"), ("c2", "CASCADE"), ("c3", "NO ACTION"),
                                              ("c4", "NO ACTION")]


def test_referencing_columns_get_an_index(s):
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p)",
        "CREATE TABLE d (pid INT, k INT, PRIMARY KEY (pid, k), FOREIGN KEY (pid) REFERENCES p)")
    assert rows(s, "SELECT index_name, column_names FROM information_schema.indexes WHERE table_name = 'c'") == [
        ("c_pkey", "id"), ("c_auto_index_c_pid_fkey", "pid")]
    # d's primary key already leads with pid: no extra index
    assert rows(s, "SELECT index_name FROM information_schema.indexes WHERE table_name = 'd'") == [("d_pkey",)]
    with pytest.raises(ProgrammingError, match='cannot drop index "c_auto_index_c_pid_fkey": foreign key'):
        s.execute("DROP INDEX c_auto_index_c_pid_fkey")
    plan = [r[0] for r in rows(s, "EXPLAIN DELETE FROM p WHERE id = 3")]
    assert plan[0] == "delete p"
    assert plan[1].strip().startswith("fk c_pid_fkey: scan /Table/") and "in c (on delete no action" in plan[1]
    plan = [r[0] for r in rows(s, "EXPLAIN INSERT INTO c VALUES (1, 1)")]
    assert plan[1].strip().startswith("fk check c_pid_fkey: get /Table/") and plan[1].endswith("/(pid) in p")
    # only the reads a statement can make: a DELETE of a child checks no parent, an UPDATE only
    # the constraints over the columns it sets
    assert not any("fk" in r[0] for r in rows(s, "EXPLAIN DELETE FROM c WHERE id = 1"))
    assert not any("fk" in r[0] for r in rows(s, "EXPLAIN UPDATE c SET id = 2 WHERE id = 1"))
    assert any("fk check c_pid_fkey" in r[0] for r in rows(s, "EXPLAIN UPDATE c SET pid = 2"))
    run(s, "CREATE TABLE q (id INT PRIMARY KEY, u INT UNIQUE, n INT)", "CREATE TABLE r (qu INT REFERENCES q (u))")
    assert not any("fk" in r[0] for r in rows(s, "EXPLAIN UPDATE q SET n = 1"))
    assert not any("fk" in r[0] for r in rows(s, "EXPLAIN INSERT INTO q VALUES (1, 1, 1)"))
    assert any("fk r_qu_fkey: scan" in r[0] for r in rows(s, "EXPLAIN UPDATE q SET u = 2"))
    assert any("fk r_qu_fkey: scan" in r[0] for r in rows(s, "EXPLAIN INSERT OR REPLACE INTO q VALUES (1, 1, 1)"))


def test_cascades_through_levels_and_self_reference(s):
    run(s, "CREATE TABLE emp (id INT PRIMARY KEY, boss INT REFERENCES emp ON DELETE CASCADE ON UPDATE CASCADE)",
        "INSERT INTO emp VALUES (1, NULL), (2, 1), (3, 2), (4, 3), (5, 1), (6, NULL)")
    s.execute("UPDATE emp SET id = 20 WHERE id = 2")
    assert rows(s, "SELECT * FROM emp ORDER BY id") == [(1, None), (3, 20), (4, 3), (5, 1), (6, None), (20, 1)]
    s.execute("DELETE FROM emp WHERE id = 1")
    assert rows(s, "SELECT * FROM emp") == [(6, None)]
    # every id moves at once: each child row moves exactly once (read before written)
    run(s, "CREATE TABLE a (id INT PRIMARY KEY)", "CREATE TABLE b (id INT PRIMARY KEY, aid INT REFERENCES a ON UPDATE CASCADE)",
        "INSERT INTO a VALUES (1), (2), (3)", "INSERT INTO b VALUES (10, 1), (20, 2), (30, 3)",
        "UPDATE a SET id = id + 1")
    assert rows(s, "SELECT * FROM b ORDER BY id") == [(10, 2), (20, 3), (30, 4)]


def test_no_action_checks_at_statement_end_restrict_does_not(s):
    run(s, "CREATE TABLE n (id INT PRIMARY KEY, up INT REFERENCES n)",
        "INSERT INTO n VALUES (2, 1), (1, NULL)",  # the parent comes later in the same statement
        "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (pid INT REFERENCES p)",
        "CREATE TABLE r (pid INT REFERENCES p ON UPDATE RESTRICT)",
        "INSERT INTO p VALUES (1), (2)", "INSERT INTO c VALUES (1)")
    s.execute("UPDATE p SET id = 3 - id")  # 1 -> 2, 2 -> 1: key 1 exists again at the end
    assert rows(s, "SELECT * FROM c") == [(1,)]
    run(s, "DELETE FROM c", "INSERT INTO r VALUES (1)")
    with pytest.raises(ForeignKeyViolation, match='"r_pid_fkey"'):
        s.execute("UPDATE p SET id = 3 - id")  # RESTRICT: the old key's referencing row decides
    s.execute("DELETE FROM n")  # the whole self-referencing table at once


def test_add_constraint_validates_existing_rows(s):
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, pid INT)",
        "INSERT INTO p VALUES (1)", "INSERT INTO c VALUES (1, 1), (2, 5), (3, NULL)")
    with pytest.raises(ForeignKeyViolation, match=r'"fk" \(Key \(pid\)=\(5\) is not present in table "p"\)'):
        s.execute("ALTER TABLE c ADD CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id)")
    assert rows(s, "SELECT count(*) FROM information_schema.referential_constraints") == [(0,)]
    s.execute("DELETE FROM c WHERE id = 2")
    s.execute("ALTER TABLE c ADD CONSTRAINT fk FOREIGN KEY (pid) REFERENCES p (id) ON DELETE SET NULL")
    # the backfilled index serves the checks
    s.execute("DELETE FROM p")
    assert rows(s, "SELECT * FROM c ORDER BY id") == [(1, None), (3, None)]
    s.execute("ALTER TABLE c DROP CONSTRAINT fk")
    s.execute("INSERT INTO c VALUES (4, 99)")
    with pytest.raises(ProgrammingError, match='constraint "fk" of relation "c" does not exist'):
        s.execute("ALTER TABLE c DROP CONSTRAINT fk")
    s.execute("ALTER TABLE c ADD COLUMN q INT REFERENCES p")
    with pytest.raises(ForeignKeyViolation, match="c_q_fkey"):
        s.execute("UPDATE c SET q = 1")


def test_drop_table_refused_unless_cascade(s):
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (pid INT REFERENCES p)",
        "INSERT INTO p VALUES (1)", "INSERT INTO c VALUES (1)")
    with pytest.raises(DependentObjectsStillExist) as e:
        s.execute("DROP TABLE p")
    assert e.value.sqlstate == "2BP01" and 'constraint "c_pid_fkey" on table "c" depends on table "p"' in str(e.value)
    with pytest.raises(NotSupportedError, match="truncate a table referenced"):
        s.execute("TRUNCATE p")
    with pytest.raises(ProgrammingError, match='cannot drop column "id"'):
        s.execute("ALTER TABLE p ADD COLUMN x INT")
        s.execute("ALTER TABLE p DROP COLUMN id")
    with pytest.raises(ProgrammingError, match='cannot drop column "pid": foreign key'):
        s.execute("ALTER TABLE c DROP COLUMN pid")
    s.execute("DROP TABLE p CASCADE")
    assert rows(s, "SELECT count(*) FROM information_schema.referential_constraints") == [(0,)]
    s.execute("INSERT INTO c VALUES (42)")  # the constraint went with the table
    # dropping both sides in one statement, and a child first, need no CASCADE
    run(s, "CREATE TABLE p2 (id INT PRIMARY KEY)", "CREATE TABLE c2 (pid INT REFERENCES p2)", "DROP TABLE c2, p2",
        "CREATE TABLE p3 (id INT PRIMARY KEY)", "CREATE TABLE c3 (pid INT REFERENCES p3)", "DROP TABLE c3",
        "DROP TABLE p3")


def test_failed_statement_and_rollback_leave_nothing(s):
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE CASCADE)",
        "CREATE TABLE d (cid INT REFERENCES c)",  # NO ACTION below the cascade
        "INSERT INTO p VALUES (1), (2)", "INSERT INTO c VALUES (1, 1), (2, 2)", "INSERT INTO d VALUES (2)")
    with pytest.raises(ForeignKeyViolation, match='"d_cid_fkey" on table "d"'):
        s.execute("DELETE FROM p")  # cascades to c, whose row 2 is referenced by d
    assert rows(s, "SELECT * FROM c ORDER BY id") == [(1, 1), (2, 2)]
    s.execute("DELETE FROM p WHERE id = 1")
    assert rows(s, "SELECT * FROM c") == [(2, 2)]


def test_information_schema_for_drivers(s):
    run(s, "CREATE TABLE p (a INT, b INT, PRIMARY KEY (a, b))",
        "CREATE TABLE c (id INT PRIMARY KEY, x INT, y INT, CONSTRAINT cxy FOREIGN KEY (x, y) REFERENCES p (a, b)"
        " ON DELETE CASCADE ON UPDATE SET NULL)")
    assert rows(s, "SELECT column_name, referenced_table_name, referenced_column_name FROM "
                   "information_schema.key_column_usage WHERE constraint_name = 'cxy' ORDER BY ordinal_position") == [
        ("x", "p", "a"), ("y", "p", "b")]
    assert rows(s, "SELECT constraint_name, referenced_table_name, unique_constraint_name, update_rule, delete_rule "
                   "FROM information_schema.referential_constraints") == [("cxy", "p", "p_pkey", "SET NULL", "CASCADE")]
    assert rows(s, "SELECT constraint_type FROM information_schema.table_constraints WHERE table_name = 'c' "
                   "ORDER BY 1") == [("FOREIGN KEY",), ("PRIMARY KEY",)]


def test_constraints_survive_reopen(tmp_path):
    kind = "lsm"
    db = open_db(kind, tmp_path)
    s = Session(db)
    run(s, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (pid INT REFERENCES p ON DELETE CASCADE)",
        "INSERT INTO p VALUES (1)", "INSERT INTO c VALUES (1)")
    db.close()
    db = open_db(kind, tmp_path)
    s = Session(db)
    with pytest.raises(ForeignKeyViolation):
        s.execute("INSERT INTO c VALUES (2)")
    s.execute("DELETE FROM p")
    assert rows(s, "SELECT count(*) FROM c") == [(0,)]
    db.close()


# -- concurrency -------------------------------------------------------------------------------


@pytest.mark.parametrize("child_commits_first", [True, False])
def test_child_insert_racing_parent_delete_leaves_no_orphan(tmp_path, child_commits_first):
    db = open_db("lsm", tmp_path)
    a, b = Session(db), Session(db)
    run(a, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p)",
        "INSERT INTO p VALUES (1)")
    run(a, "BEGIN", "INSERT INTO c VALUES (1, 1)")  # sees the parent
    run(b, "BEGIN", "DELETE FROM p WHERE id = 1")  # sees no child (a's insert is not committed)
    first, second = (a, b) if child_commits_first else (b, a)
    first.execute("COMMIT")
    with pytest.raises(SerializationFailure) as e:
        second.execute("COMMIT")
    assert e.value.sqlstate == "40001"
    assert rows(a, "SELECT count(*) FROM c WHERE pid NOT IN (SELECT id FROM p)") == [(0,)]
    assert rows(a, "SELECT count(*) FROM p") == [(0 if not child_commits_first else 1,)]
    db.close()


def test_threads_racing_never_commit_an_orphan(tmp_path):
    db = open_db("lsm", tmp_path)
    setup = Session(db)
    run(setup, "CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p)")
    rounds = 40
    barrier = threading.Barrier(2)
    outcomes = {"child": 0, "parent": 0, "conflicts": 0}
    lock = threading.Lock()
    run(setup, *[f"INSERT INTO p VALUES ({i})" for i in range(rounds)])

    def worker(which: str) -> None:
        sess = Session(db)
        for i in range(rounds):
            barrier.wait()
            try:
                sess.execute("BEGIN")
                if which == "child":
                    sess.execute("INSERT INTO c VALUES (?, ?)", (i, i))
                else:
                    sess.execute("DELETE FROM p WHERE id = ?", (i,))
                sess.execute("COMMIT")
                with lock:
                    outcomes[which] += 1
            except (SerializationFailure, ForeignKeyViolation):
                sess.rollback()
                with lock:
                    outcomes["conflicts"] += 1

    threads = [threading.Thread(target=worker, args=(w,)) for w in ("child", "parent")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rows(setup, "SELECT count(*) FROM c WHERE pid NOT IN (SELECT id FROM p)") == [(0,)]
    # every round one side lost: a child and the deletion of its parent never both commit
    assert outcomes["child"] + outcomes["parent"] == rounds
    assert outcomes["conflicts"] == rounds
    db.close()
