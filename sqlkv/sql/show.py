"""SHOW TABLES / COLUMNS / INDEXES / CREATE TABLE / STATISTICS and DESCRIBE, as catalog queries.

``SHOW COLUMNS FROM users`` is parsed into the query ``SELECT column_name, data_type,
is_nullable, column_default FROM information_schema.columns WHERE lower(table_name) =
lower('users') AND NOT is_hidden ORDER BY ordinal_position`` and runs like any SELECT (plan
cache, EXPLAIN, cursor.description). The statement remembers the table it names so planning
reports ``relation "users" does not exist`` instead of an empty result.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import Token, TokenType

from sqlkv.errors import NotSupportedError, ProgrammingError


@dataclass
class ShowQuery:
    sql: str
    table: str | None  # the relation it names (checked when planned), None for SHOW TABLES
    views_too: bool = False  # SHOW CREATE: a view is fine too


def _literal(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def _name(toks: list[Token], what: str) -> str:
    if len(toks) != 1 or toks[0].token_type in (TokenType.STRING, TokenType.NUMBER):
        shown = " ".join(t.text for t in toks) or "nothing"
        raise ProgrammingError(f"syntax error: {what} needs one table name, got {shown}")
    return toks[0].text


def show_query(words: list[str], toks: list[Token]) -> ShowQuery:
    """The query for ``SHOW ...`` / ``DESCRIBE t`` given the statement's tokens."""
    if words[0] in ("DESCRIBE", "DESC"):
        return _columns(_name(toks[1:], "DESCRIBE"))
    rest = words[1:]
    if rest[:1] == ["TABLES"] and len(toks) == 2:
        return ShowQuery("SELECT table_name, table_type FROM information_schema.tables ORDER BY table_name", None)
    if rest[:1] == ["COLUMNS"] and rest[1:2] in (["FROM"], ["IN"]):
        return _columns(_name(toks[3:], "SHOW COLUMNS FROM"))
    if rest[:1] in (["INDEXES"], ["INDEX"], ["KEYS"]) and rest[1:2] in (["FROM"], ["IN"]):
        name = _name(toks[3:], "SHOW INDEXES FROM")
        return ShowQuery("SELECT index_name, is_unique, is_primary, column_names, storing_names, predicate, index_type "
                         "FROM information_schema.indexes WHERE lower(table_name) = lower("
                         f"{_literal(name)}) ORDER BY index_id", name)
    if rest[:1] == ["CREATE"]:
        skip = 3 if rest[1:2] in (["TABLE"], ["VIEW"]) else 2
        name = _name(toks[skip:], "SHOW CREATE")
        return ShowQuery("SELECT table_name, create_statement FROM sqlkv_internal.create_statements "
                         f"WHERE lower(table_name) = lower({_literal(name)})", name, views_too=True)
    if rest[:3] == ["STATISTICS", "FOR", "TABLE"]:
        name = _name(toks[4:], "SHOW STATISTICS FOR TABLE")
        return ShowQuery("SELECT column_names, index_name, row_count, distinct_count, null_count, created "
                         "FROM sqlkv_internal.table_statistics WHERE lower(table_name) = lower("
                         f"{_literal(name)}) ORDER BY index_id NULLS LAST, column_count, column_names", name)
    shown = " ".join(t.text for t in toks[:3])
    raise NotSupportedError(f"unsupported statement: {shown} (sqlkv has SHOW TABLES, SHOW COLUMNS FROM t, "
                            "SHOW INDEXES FROM t, SHOW CREATE TABLE t, SHOW STATISTICS FOR TABLE t, "
                            "DESCRIBE t)")


def _columns(name: str) -> ShowQuery:
    return ShowQuery("SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns "
                     f"WHERE lower(table_name) = lower({_literal(name)}) AND NOT is_hidden "
                     "ORDER BY ordinal_position", name)


def check_shown(catalog, name: str, views_too: bool) -> None:
    """ProgrammingError when the relation a SHOW names does not exist."""
    if views_too and catalog.find_any(name) is not None:
        return
    catalog.get_table(name)
