"""Golden tests: the exact KV writes of representative statements (reviewed by hand).

Each expectation lists the commit batch of one statement, catalog writes left out, rendered
as ``put <pretty key> -> <decoded value>`` / ``del <key>`` / ``delrange <start> - <end>``.
Key grammar: /<table>/<index>/<key values...>/<family>; ``~`` marks a descending value.
"""

from __future__ import annotations

import pytest

from tests.sql.core_support import KVTrace


@pytest.fixture
def traced():
    trace = KVTrace()
    s = trace.session
    s.execute("CREATE TABLE users (id INT PRIMARY KEY, name TEXT, email TEXT UNIQUE, age INT, FAMILY extra (age))")
    s.execute("CREATE INDEX users_name_idx ON users (name DESC) STORING (age)")
    yield trace
    trace.close()


def test_insert_writes_row_families_and_index_entries(traced):
    assert traced.run("INSERT INTO users VALUES (10, 'ann', 'a@b.c', 31)") == [
        "put /users/users_pkey/10/0 -> {name: 'ann', email: 'a@b.c'}",
        "put /users/users_pkey/10/1 -> {age: 31}",
        'put /users/users_email_key/"a@b.c" -> [10]',
        'put /users/users_name_idx/~"ann"/10 -> [31]',
    ]


def test_insert_all_null_row_keeps_sentinel_and_null_unique_form(traced):
    # family 0 is written even though empty; family 1 (all NULL) is absent; the unique
    # index entry with a NULL carries the PK in its key, so NULLs never conflict.
    assert traced.run("INSERT INTO users (id, name) VALUES (11, NULL)") == [
        "put /users/users_pkey/11/0 -> {}",
        "put /users/users_email_key/NULL/11 -> []",
        "put /users/users_name_idx/~NULL/11 -> [None]",
    ]


def test_update_rewrites_only_changed_entries(traced):
    traced.run("INSERT INTO users VALUES (10, 'ann', 'a@b.c', 31)")
    assert traced.run("UPDATE users SET email = 'x@y.z', age = NULL WHERE id = 10") == [
        "put /users/users_pkey/10/0 -> {name: 'ann', email: 'x@y.z'}",
        "del /users/users_pkey/10/1",
        'del /users/users_email_key/"a@b.c"',
        'put /users/users_email_key/"x@y.z" -> [10]',
        'put /users/users_name_idx/~"ann"/10 -> [None]',
    ]


def test_primary_key_change_moves_the_row(traced):
    traced.run("INSERT INTO users (id, name) VALUES (11, NULL)")
    assert traced.run("UPDATE users SET id = 12 WHERE id = 11") == [
        "del /users/users_pkey/11/0",
        "put /users/users_pkey/12/0 -> {}",
        "del /users/users_email_key/NULL/11",
        "put /users/users_email_key/NULL/12 -> []",
        "del /users/users_name_idx/~NULL/11",
        "put /users/users_name_idx/~NULL/12 -> [None]",
    ]


def test_delete_and_truncate(traced):
    traced.run("INSERT INTO users VALUES (10, 'ann', 'a@b.c', 31)")
    assert traced.run("DELETE FROM users WHERE id = 10") == [
        "del /users/users_pkey/10/0",
        "del /users/users_pkey/10/1",
        'del /users/users_email_key/"a@b.c"',
        'del /users/users_name_idx/~"ann"/10',
    ]
    # the three index prefixes merge into one range delete in the transaction buffer
    assert traced.run("TRUNCATE users") == ["delrange /users/users_pkey - /users/4"]


def test_hidden_rowid_and_failed_statement_writes_nothing(traced):
    traced.session.execute("CREATE TABLE logs (msg TEXT)")
    assert traced.run("INSERT INTO logs VALUES ('hi'), ('ho')") == [
        "put /logs/logs_pkey/1/0 -> {msg: 'hi'}",
        "put /logs/logs_pkey/2/0 -> {msg: 'ho'}",
    ]
    traced.run("INSERT INTO users VALUES (1, 'a', 'dup', 1)")
    with pytest.raises(Exception):
        traced.run("INSERT INTO users VALUES (2, 'b', 'new', 1), (3, 'c', 'dup', 1)")
    assert traced.batches == []
