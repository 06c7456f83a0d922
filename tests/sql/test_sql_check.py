"""CHECK DATABASE finds missing, dangling and stale index entries, naming table/index/key."""

from __future__ import annotations

from sqlkv.encoding.keys import encode_key, index_prefix
from sqlkv.encoding.values import encode_values
from sqlkv.sql.check import check_database
from sqlkv.sql import Database, Session


def _raw(s: Session, fn) -> None:
    txn = s.db.txn_manager.begin()
    fn(txn)
    txn.commit()


def test_check_database_reports_index_damage():
    s = Session(Database.open())
    s.execute("CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE, age INT)")
    s.execute("CREATE INDEX users_age ON users (age)")
    s.execute("INSERT INTO users VALUES (1, 'a@x', 30), (2, 'b@x', 40)")
    assert check_database(s) == []
    tid = 100
    _raw(s, lambda t: t.delete(index_prefix(tid, 2) + encode_key(["a@x"])))
    _raw(s, lambda t: t.put(index_prefix(tid, 3) + encode_key([99, 7]), encode_values([])))
    _raw(s, lambda t: t.put(index_prefix(tid, 2) + encode_key(["b@x"]), encode_values([5])))
    problems = check_database(s)
    assert sorted(problems) == sorted([
        'users: index users_email_key: missing entry /users/users_email_key/"a@x"',
        'users: index users_email_key: entry /users/users_email_key/"b@x" has a stale value',
        "users: index users_age: dangling entry /users/users_age/99/7 (no such row)",
    ])
    assert [r[0] for r in s.execute("CHECK DATABASE")] == problems
