"""ALTER TABLE forms sqlglot does not parse, turned into `exp.Alter` trees by hand.

- ``ALTER TABLE t RENAME CONSTRAINT a TO b``: an Alter whose action is a RenameColumn marked
  ``constraint`` (executed by `sqlkv.sql.ddl.constraints.rename_constraint`);
- CockroachDB's ``ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (a [ASC|DESC], ...)``: an
  Alter whose action is a PrimaryKey node (``ADD PRIMARY KEY`` would be an AddConstraint), run
  by `sqlkv.sql.ddl.alter_column.alter_primary_key`;
- ``ALTER TABLE t ADD CHECK (expr)`` without a constraint name: an AddConstraint of a CHECK.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlkv.errors import SqlSyntaxError
from sqlkv.sql.parse_edits import matching_paren, token_ident, token_word
from sqlkv.sql.parse_operators import parse_expression  # sqlglot.parse_one with @> <@ &&


def alter_table_special(text: str, toks: list[Token]) -> exp.Alter | None:
    """The tree of one of the forms above, or None for any other ALTER TABLE."""
    return _rename_constraint(toks) or _alter_primary_key(toks) or _add_check(text, toks)


def _add_check(text: str, toks: list[Token]) -> exp.Alter | None:
    """``ALTER TABLE t ADD CHECK (expr)`` (unnamed; sqlglot parses only the named form)."""
    words = [token_word(t) for t in toks]
    if words[3:6] != ["ADD", "CHECK", "("] or words[-1] != ")" or matching_paren(toks, 5) != len(toks) - 1:
        return None
    expr = parse_expression(text[toks[5].end + 1: toks[-1].start])
    check = exp.CheckColumnConstraint(this=expr)
    return exp.Alter(this=exp.to_table(token_ident(toks[2])), kind="TABLE",
                     actions=[exp.AddConstraint(expressions=[check])])


def _alter_primary_key(toks: list[Token]) -> exp.Alter | None:
    words = [token_word(t) for t in toks]  # the tokenizer makes PRIMARY KEY one token
    if words[3:5] != ["ALTER", "PRIMARY KEY"]:
        return None
    if len(toks) < 10 or words[5:8] != ["USING", "COLUMNS", "("] or words[-1] != ")":
        raise SqlSyntaxError("syntax error: expected ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (a, ...)")
    keys: list[exp.Expression] = []
    for part in _split_on_commas(toks[8:-1]):
        pw = [token_word(t) for t in part]
        if len(part) not in (1, 2) or (len(part) == 2 and pw[1] not in ("ASC", "DESC")):
            raise SqlSyntaxError("syntax error: USING COLUMNS takes column names, each optionally ASC or DESC")
        keys.append(exp.Ordered(this=exp.column(token_ident(part[0])), desc=len(part) == 2 and pw[1] == "DESC"))
    return exp.Alter(this=exp.to_table(token_ident(toks[2])), kind="TABLE", actions=[exp.PrimaryKey(expressions=keys)])


def _split_on_commas(toks: list[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    for t in toks:
        if t.token_type == TokenType.COMMA:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _rename_constraint(toks: list[Token]) -> exp.Alter | None:
    words = [token_word(t) for t in toks]
    if len(toks) != 8 or words[3:5] != ["RENAME", "CONSTRAINT"] or words[6] != "TO":
        return None
    action = exp.RenameColumn(this=exp.to_identifier(token_ident(toks[5])), to=exp.to_identifier(token_ident(toks[7])))
    action.args["constraint"] = True
    return exp.Alter(this=exp.to_table(token_ident(toks[2])), kind="TABLE", actions=[action])
