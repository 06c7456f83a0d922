"""Syntax errors name the line and column in the user's own text (not in sqlkv's rewrite of it:
placeholders, EXPLAIN, leading blank lines), and a truncated statement is a syntax error."""

from __future__ import annotations

import pytest

from sqlkv.errors import ProgrammingError
from sqlkv.sql import Database, Session


@pytest.fixture
def session():
    db = Database.open(":memory:")
    s = Session(db)
    yield s
    s.close()
    db.close()


def _syntax_error(session, sql, params=()):
    with pytest.raises(ProgrammingError) as info:
        session.execute(sql, params)
    return info.value


def test_syntax_error_position_is_in_the_users_text_despite_placeholders(session):
    sql = "SELECT * FROM t WHERE a = ? AND b = ? AND"
    err = _syntax_error(session, sql, (1, 2))
    assert err.line == 1
    # sqlglot points at the last character of the offending token; "?" -> ":__pN" is undone
    assert err.col == sql.rindex("AND") + 3
    assert f"line 1, column {err.col}" in str(err)


def test_syntax_error_position_on_later_line_and_after_leading_space(session):
    sql = "  \nSELECT ?,\n  ? FROM"
    err = _syntax_error(session, sql, (1, 2))
    assert (err.line, err.col) == (3, len("  ? FROM"))


def test_syntax_error_position_inside_explain(session):
    sql = "EXPLAIN SELECT ? FROM"
    err = _syntax_error(session, sql, (1,))
    assert (err.line, err.col) == (1, len(sql))


@pytest.mark.parametrize("sql", ["SELECT", "SELECT * FROM t GROUP BY", "select from t"])
def test_truncated_statements_are_syntax_errors(sql):
    session = Session(Database.open(":memory:"))
    session.execute("CREATE TABLE t (a INT)")
    with pytest.raises(ProgrammingError, match="syntax error"):
        session.execute(sql)


@pytest.mark.parametrize("sql", ["DELETE FROM", "INSERT INTO", "SELECT * FROM", "DELETE @ FROM t WHERE TRUE"])
def test_a_missing_table_name_is_said_in_sql_terms(session, sql):
    """Not "<Token token_type: TokenType.SENTINEL ...>" nor "unsupported DML target: False"."""
    err = _syntax_error(session, sql)
    assert "syntax error" in str(err)
    assert "Token" not in str(err) and "False" not in str(err)
