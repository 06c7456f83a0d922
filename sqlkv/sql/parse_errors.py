"""Syntax errors in the user's terms: located at their line and column, without sqlglot's
Python class names (`describe_parse_error`), and sqlglot's "Falling back to Command" log
warning silenced (sqlkv refuses those statements with its own error)."""

from __future__ import annotations

import logging
import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token

from sqlkv.errors import ProgrammingError, SqlSyntaxError
from sqlkv.sql.parse_edits import Edit, original_offset
from sqlkv.sql.parse_operators import parse_sql
from sqlkv.sql.parse_tree import walk_nodes


def located_error(sql: str, offset: int, detail: str) -> ProgrammingError:
    """A syntax error carrying ``line``/``col`` (1-based) of ``offset`` in the user's text."""
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    err = SqlSyntaxError(f"syntax error at line {line}, column {col}{detail}")
    err.line = line  # type: ignore[attr-defined]
    err.col = col  # type: ignore[attr-defined]
    return err


SQLGLOT_DIALECT = Dialect.get_or_raise(None)  # sqlglot's default dialect, the one sqlkv reads


def sqlglot_parse(sql: str, original: str, edits: list[Edit] | None = None,
                  tokens: list[Token] | None = None, walked: list[exp.Expression] | None = None
                  ) -> exp.Expression:
    """``sql`` parsed by sqlglot; ``tokens``, when given, are sqlglot's tokens of ``sql`` already
    made (tokenizing is a third of the parse time of a long statement: not done twice).
    ``walked``, when given, receives every node of the tree -- in ``walk()`` order, or as the
    plain parser built them -- the one list the parser's later checks and rewrites share (each
    walk costs as much as a quarter of sqlglot's own parse of a short statement)."""
    try:
        made: list[exp.Expression] = []  # a plain SELECT's nodes, as the plain parser built them
        trees = parse_sql(sql, tokens, made)  # sqlglot.parse plus @>, <@ and && (parse_operators.py)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        line, col = err.get("line"), err.get("col")
        desc = describe_parse_error(err.get("description") or str(e))
        near = err.get("highlight")
        near_txt = f' near "{near}"' if near else ""
        if line:
            located = SqlSyntaxError(f"syntax error{near_txt}: {desc}")
            located.offset = original_offset(sql, line, col or 1, edits or [])  # type: ignore[attr-defined]
            located.args = (f"{near_txt}: {desc}",)
            raise located from None
        raise SqlSyntaxError(f"syntax error{near_txt}: {desc}") from None
    except TokenError as e:
        raise SqlSyntaxError(f"syntax error: {e}") from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise SqlSyntaxError("syntax error: expected exactly one statement")
    tree = trees[0]
    if isinstance(tree, exp.Command):
        word = str(tree.this).upper()
        raise SqlSyntaxError(f'syntax error or unsupported statement at or near "{word}": {original[:80]}')
    nodes = made or walk_nodes(tree)
    if walked is not None:
        walked.extend(nodes)
    # sqlglot accepts a few truncated forms silently; they are syntax errors in SQL.
    for node in nodes:
        if isinstance(node, exp.Select) and not node.expressions:
            raise SqlSyntaxError("syntax error: SELECT without a select list")
        if isinstance(node, exp.Group) and not node.expressions and not node.args.get("all"):
            raise SqlSyntaxError("syntax error: GROUP BY without an expression")
    return tree


# -- error-message formatting (kept apart from the parsing logic above) --------------------

_MISSING_ARG = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>")


_SQLGLOT_TERMS = {"Invalid expression / Unexpected token": "unexpected token"}


_OPERATORS = {"EQ": "=", "NEQ": "<>", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "ADD": "+",
              "SUB": "-", "MUL": "*", "DIV": "/", "MOD": "%", "AND": "AND", "OR": "OR", "LIKE": "LIKE"}


def describe_parse_error(description: str) -> str:
    """sqlglot's error description in the user's terms: no Python class names.

    ``Required keyword: 'expression' missing for <class 'sqlglot.expressions.core.EQ'>``
    becomes ``expected an expression after =``.
    """
    found = _MISSING_ARG.search(description)
    if found:
        operand = "an expression" if found.group(1) in ("this", "expression", "expressions") else found.group(1)
        node = found.group(2).upper()
        cls = getattr(exp, found.group(2), None)
        if node not in _OPERATORS and isinstance(cls, type) and issubclass(cls, exp.Func):
            # a function sqlglot knows, called with too few arguments: name it as the user typed
            return f"missing argument in {cls.sql_names()[0].lower()}()"
        return f"expected {operand} after {_OPERATORS.get(node, node)}"
    return _TOKEN_REPR.sub(_token_text, _SQLGLOT_TERMS.get(description, description))


_TOKEN_REPR = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: .*?>")


def _token_text(found: re.Match) -> str:
    """sqlglot's repr of a token, as the text it stands for (the end of the statement for its
    SENTINEL token)."""
    return "the end of the statement" if found.group(1) == "SENTINEL" else f'"{found.group(2)}"'


def _drop_command_fallback(record: logging.LogRecord) -> bool:
    """sqlglot logs "Falling back to parsing as a 'Command'" for statements it does not know;
    sqlkv refuses those with its own error, so the warning would only clutter the user's stderr."""
    return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_drop_command_fallback)
