"""Expression indexes (``CREATE [UNIQUE] INDEX ON t (lower(email))``) against sqlite3, which
has them: the index is kept through inserts, updates and deletes, a UNIQUE one refuses
duplicates of the expression, and the planner uses it when a query's filter contains the
same expression (EXPLAIN shows the span)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from sqlkv.errors import ProgrammingError, UniqueViolation
from sqlkv.sql.session import Database, Session
from tests.sql.core_support import open_db, rows, same_write_outcome

SCHEMA = [
    "CREATE TABLE users (id INT PRIMARY KEY, email TEXT, n INT)",
    "CREATE UNIQUE INDEX users_email_ci ON users (lower(email))",
    "CREATE INDEX users_n2 ON users ((n * 2))",
]


@pytest.fixture
def s():
    db = Database.open(":memory:")
    yield Session(db)
    db.close()


def plan(s: Session, sql: str) -> list[str]:
    return [r[0].strip() for r in rows(s, "EXPLAIN " + sql)]


@pytest.mark.parametrize("seed", range(4))
def test_random_writes_and_lookups_match_sqlite(s, seed):
    lite = sqlite3.connect(":memory:")
    for sql in SCHEMA:
        lite.execute(sql)
        s.execute(sql)
    rng = random.Random(seed)
    names = ["ann", "Ann", "ANN", "bob", "Bob", "cy"]
    failures = 0
    for _ in range(200):
        k = rng.randrange(20)
        e = f"'{rng.choice(names)}@x'" if rng.random() < 0.9 else "NULL"
        sql = rng.choice([
            f"INSERT INTO users VALUES ({k}, {e}, {rng.randrange(10)})",
            f"UPDATE users SET email = {e} WHERE id = {k}",
            f"UPDATE users SET n = n + 1 WHERE lower(email) = lower({e})",
            f"DELETE FROM users WHERE lower(email) = lower({e})",
        ])
        failures += not same_write_outcome(s, lite, sql)
        probe = f"{rng.choice(names).lower()}@x"
        q = "SELECT id, email, n FROM users WHERE lower(email) = ?"
        assert rows(s, q, (probe,)) == lite.execute(q, (probe,)).fetchall(), (sql, probe)
        q = "SELECT id FROM users WHERE n * 2 >= ? ORDER BY id"
        assert rows(s, q, (k,)) == lite.execute(q, (k,)).fetchall(), sql
    assert failures > 5  # unique refusals (and primary-key ones) happened
    assert rows(s, "CHECK DATABASE") == []


def test_planner_uses_the_index_when_the_expression_matches(s):
    for sql in SCHEMA:
        s.execute(sql)
    s.execute("INSERT INTO users VALUES (1, 'Ann@X', 3)")
    assert plan(s, "SELECT id FROM users WHERE lower(email) = 'ann@x'")[-1] == \
        'get users@users_email_ci /Table/100/2/"ann@x"'
    assert plan(s, "SELECT id FROM users AS u WHERE lower(u.email) = 'ann@x'")[-1].startswith("get users@users_email_ci")
    assert plan(s, "SELECT id FROM users WHERE n * 2 > 5")[-1] == "scan users@users_n2 /Table/100/3/6 - /Table/100/4"
    assert plan(s, "DELETE FROM users WHERE lower(email) = 'x'")[-1].startswith("get users@users_email_ci")
    # written in parentheses, as PostgreSQL users write expression index lookups
    assert plan(s, "SELECT id FROM users WHERE (n * 2) BETWEEN 6 AND 8")[-1] == \
        "scan users@users_n2 /Table/100/3/6 - /Table/100/3/9"
    assert plan(s, "SELECT id FROM users WHERE (lower(email)) = 'ann@x'")[-1].startswith("get users@users_email_ci")
    assert rows(s, "SELECT id FROM users WHERE (n * 2) BETWEEN 6 AND 8") == [(1,)]
    # another expression is no match: a full scan
    assert "full scan" in plan(s, "SELECT id FROM users WHERE upper(email) = 'ANN@X'")[-1]
    with pytest.raises(UniqueViolation, match=r'"users_email_ci" \(Key \(LOWER\(email\)\)=\(ann@x\) already exists'):
        s.execute("INSERT INTO users VALUES (2, 'ANN@x', 1)")
    assert rows(s, "SELECT index_name, column_names FROM information_schema.indexes WHERE table_name = 'users'") == [
        ("users_pkey", "id"), ("users_email_ci", "LOWER(email)"), ("users_n2", "n * 2")]
    assert rows(s, "SELECT * FROM users") == [(1, "Ann@X", 3)]  # the hidden columns stay hidden


def test_rules_and_drop(s):
    for sql in SCHEMA:
        s.execute(sql)
    with pytest.raises(ProgrammingError, match="immutable"):
        s.execute("CREATE INDEX bad ON users (random())")
    with pytest.raises(ProgrammingError, match='"nope"'):
        s.execute("CREATE INDEX bad ON users (lower(nope))")
    with pytest.raises(ProgrammingError, match='index expression LOWER\\(email\\) uses it'):
        s.execute("ALTER TABLE users DROP COLUMN email")
    s.execute("DROP INDEX users_email_ci")
    s.execute("ALTER TABLE users DROP COLUMN email")  # the hidden column went with its index
    assert rows(s, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'users' AND is_hidden") == [(1,)]


def test_survives_reopen(tmp_path):
    db = open_db("lsm", tmp_path)
    s = Session(db)
    for sql in SCHEMA:
        s.execute(sql)
    s.execute("INSERT INTO users VALUES (1, 'Q@Q', 1)")
    db.close()
    db = open_db("lsm", tmp_path)
    s = Session(db)
    assert rows(s, "SELECT id FROM users WHERE lower(email) = 'q@q'") == [(1,)]
    with pytest.raises(UniqueViolation):
        s.execute("INSERT INTO users VALUES (2, 'q@Q', 1)")
    db.close()
