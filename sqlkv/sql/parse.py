"""Parsing: SQL text -> `ParsedStatement` (a sqlglot AST plus what sqlglot has no node for).

``UPSERT INTO users VALUES (?, ?)`` goes through three steps:

1. `split_statements` tokenizes the text with sqlglot's tokenizer and cuts it at top-level
   semicolons, remembering each statement's line and column for error messages.
2. `_rewrite` looks at the statement's tokens for sqlkv/CockroachDB syntax sqlglot lacks and
   rewrites the text: ``UPSERT`` becomes ``INSERT`` (flag ``upsert``), ``REPLACE INTO`` becomes
   ``INSERT OR REPLACE INTO``, ``STORING (...)`` and ``FAMILY f (...)`` clauses are cut out and
   kept aside, ``ASC``/``DESC`` inside a table-level ``PRIMARY KEY (...)`` are recorded and
   removed, and every ``?`` becomes a named placeholder ``:__pN`` so that, after parsing, each
   `exp.Placeholder` knows its position: ``node.meta["param_index"] = N`` (``this`` reset to
   None so it prints as ``?`` again). Transaction control (BEGIN, COMMIT, SAVEPOINT, RELEASE,
   ROLLBACK [TO]), ``EXPLAIN [ANALYZE]`` and ``CHECK DATABASE`` are recognised here directly.
3. sqlglot parses the rewritten text; a `ParseError`/`TokenError` becomes a ProgrammingError
   with the line and column in the original text.

`parse_statement` is cached per SQL text (LRU). Callers must not mutate the cached AST: plan
from ``stmt.ast.copy()`` when the planner rewrites nodes.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from sqlkv.errors import NotSupportedError, ProgrammingError, SqlSyntaxError
from sqlkv.sql.depth import too_deep

_PARAM_PREFIX = "__p"
_HEX_MARKER = "__sqlkv_hex"
_EXPLAIN_RE = re.compile(r"\s*EXPLAIN\s+(ANALY[SZ]E\s+)?", re.IGNORECASE)


@dataclass
class Statement:
    """One statement of a script: its text and where it starts (1-based line and column)."""

    sql: str
    line: int
    col: int


@dataclass
class ParsedStatement:
    """A parsed statement. ``kind`` names it ("SELECT", "INSERT", "BEGIN", "EXPLAIN", ...)."""

    kind: str
    sql: str
    ast: exp.Expression | None = None
    param_count: int = 0
    named_params: bool = False
    upsert: bool = False
    savepoint: str | None = None
    explain_analyze: bool = False
    inner: ParsedStatement | None = None  # the statement under EXPLAIN
    storing: list[str] = field(default_factory=list)
    families: list[tuple[str, list[str]]] = field(default_factory=list)
    key_directions: dict[str, bool] = field(default_factory=dict)  # column -> desc, table-level PK/UNIQUE


def _tokenize(sql: str) -> list[Token]:
    try:
        return Tokenizer().tokenize(sql)
    except TokenError as e:
        raise SqlSyntaxError(f"syntax error: {e}") from None


def _start_col(tok: Token) -> int:
    return tok.col - (tok.end - tok.start)


def split_statements(text: str) -> list[Statement]:
    """Split a script into statements at top-level semicolons (comments and strings respected)."""
    tokens = _tokenize(text)
    out: list[Statement] = []
    current: list[Token] = []
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if current:
                out.append(_statement_of(text, current))
            current = []
        else:
            current.append(tok)
    if current:
        out.append(_statement_of(text, current))
    return out


def _statement_of(text: str, toks: list[Token]) -> Statement:
    first, last = toks[0], toks[-1]
    end = last.end + 1
    # A quoted identifier/string token's end points at its closing quote already.
    return Statement(text[first.start : end], first.line, _start_col(first))


@lru_cache(maxsize=1024)
def parse_statement(sql: str) -> ParsedStatement:
    """Parse exactly one statement (ProgrammingError if the text holds several or none)."""
    tokens = _tokenize(sql)
    _refuse_unsupported(tokens)
    pieces = _split_tokens(tokens)
    if not pieces:
        raise ProgrammingError("empty statement")
    if len(pieces) > 1:
        raise ProgrammingError("cannot execute several statements at once; use execute_script")
    toks = pieces[0]
    text = sql[toks[0].start : toks[-1].end + 1]
    try:
        return _parse_tokens(text, _tokenize(text))
    except RecursionError:
        raise too_deep(text) from None
    except ProgrammingError as e:
        offset = getattr(e, "offset", None)
        if offset is None:
            raise
        raise _located(sql, toks[0].start + offset, e.args[0]) from None


def _located(sql: str, offset: int, detail: str) -> ProgrammingError:
    """A syntax error carrying ``line``/``col`` (1-based) of ``offset`` in the user's text."""
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    err = SqlSyntaxError(f"syntax error at line {line}, column {col}{detail}")
    err.line = line  # type: ignore[attr-defined]
    err.col = col  # type: ignore[attr-defined]
    return err


def _refuse_unsupported(tokens: list[Token]) -> None:
    """Clear errors for SQLite statements sqlkv does not have (before splitting: a trigger
    body holds semicolons)."""
    words = [_word(t) for t in tokens[:4]]
    if words[:1] == ["CREATE"] and "TRIGGER" in words:
        raise NotSupportedError("triggers are not supported")
    if words[:1] in (["REINDEX"], ["VACUUM"], ["PRAGMA"], ["ATTACH"], ["DETACH"]):
        raise NotSupportedError(f"{words[0]} is not supported")


def _split_tokens(tokens: list[Token]) -> list[list[Token]]:
    pieces: list[list[Token]] = []
    current: list[Token] = []
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            if current:
                pieces.append(current)
            current = []
        else:
            current.append(tok)
    if current:
        pieces.append(current)
    return pieces


def _word(tok: Token | None) -> str:
    if tok is None or tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        return ""
    return tok.text.upper()


def _ident(tok: Token) -> str:
    return tok.text if tok.token_type == TokenType.IDENTIFIER else tok.text.lower()


def _parse_tokens(text: str, toks: list[Token]) -> ParsedStatement:
    words = [_word(t) for t in toks[:4]] + ["", "", "", ""]
    w0, w1 = words[0], words[1]
    if w0 in ("BEGIN", "START") and (w0 == "BEGIN" or w1 == "TRANSACTION"):
        return ParsedStatement("BEGIN", text)
    if w0 in ("COMMIT", "END"):
        return ParsedStatement("COMMIT", text)
    if w0 == "ROLLBACK":
        return _parse_rollback(text, toks)
    if w0 == "SAVEPOINT" and len(toks) == 2:
        return ParsedStatement("SAVEPOINT", text, savepoint=_ident(toks[1]))
    if w0 == "RELEASE":
        rest = toks[2:] if w1 == "SAVEPOINT" else toks[1:]
        if len(rest) != 1:
            raise SqlSyntaxError("syntax error: expected RELEASE [SAVEPOINT] name")
        return ParsedStatement("RELEASE", text, savepoint=_ident(rest[0]))
    if w0 == "CHECK" and w1 == "DATABASE" and len(toks) == 2:
        return ParsedStatement("CHECK DATABASE", text)
    if w0 == "EXPLAIN":
        # sqlglot tokenizes EXPLAIN as a command swallowing the rest, so cut the text instead.
        m = _EXPLAIN_RE.match(text)
        inner_text = text[m.end() :] if m else ""
        if not inner_text.strip():
            raise SqlSyntaxError("syntax error: EXPLAIN needs a statement")
        try:
            inner = _parse_tokens(inner_text, _tokenize(inner_text))
        except ProgrammingError as e:
            if getattr(e, "offset", None) is not None:
                e.offset += m.end()  # type: ignore[union-attr,attr-defined]
            raise
        analyze = bool(m and m.group(1))
        return ParsedStatement("EXPLAIN", text, explain_analyze=analyze, inner=inner, param_count=inner.param_count)
    if w0 == "ALTER" and w1 == "TABLE":
        special = _rename_constraint(text, toks) or _alter_primary_key(text, toks)
        if special is not None:
            return special
    return _parse_sql(text, toks)


def _alter_primary_key(text: str, toks: list[Token]) -> ParsedStatement | None:
    """CockroachDB's ``ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (a [ASC|DESC], ...)``:
    an Alter whose action is a PrimaryKey node (ADD PRIMARY KEY would be an AddConstraint)."""
    words = [_word(t) for t in toks]  # the tokenizer makes PRIMARY KEY one token
    if words[3:5] != ["ALTER", "PRIMARY KEY"]:
        return None
    if len(toks) < 10 or words[5:8] != ["USING", "COLUMNS", "("] or words[-1] != ")":
        raise SqlSyntaxError("syntax error: expected ALTER TABLE t ALTER PRIMARY KEY USING COLUMNS (a, ...)")
    keys: list[exp.Expression] = []
    for part in _split_on_commas(toks[8:-1]):
        pw = [_word(t) for t in part]
        if len(part) not in (1, 2) or (len(part) == 2 and pw[1] not in ("ASC", "DESC")):
            raise SqlSyntaxError("syntax error: USING COLUMNS takes column names, each optionally ASC or DESC")
        keys.append(exp.Ordered(this=exp.column(_ident(part[0])), desc=len(part) == 2 and pw[1] == "DESC"))
    ast = exp.Alter(this=exp.to_table(_ident(toks[2])), kind="TABLE", actions=[exp.PrimaryKey(expressions=keys)])
    return ParsedStatement("ALTER TABLE", text, ast=ast)


def _split_on_commas(toks: list[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    for t in toks:
        if t.token_type == TokenType.COMMA:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _rename_constraint(text: str, toks: list[Token]) -> ParsedStatement | None:
    """``ALTER TABLE t RENAME CONSTRAINT a TO b`` (sqlglot has no node for it): an Alter whose
    action is a RenameColumn marked ``constraint``."""
    words = [_word(t) for t in toks]
    if len(toks) != 8 or words[3:5] != ["RENAME", "CONSTRAINT"] or words[6] != "TO":
        return None
    action = exp.RenameColumn(this=exp.to_identifier(_ident(toks[5])), to=exp.to_identifier(_ident(toks[7])))
    action.args["constraint"] = True
    ast = exp.Alter(this=exp.to_table(_ident(toks[2])), kind="TABLE", actions=[action])
    return ParsedStatement("ALTER TABLE", text, ast=ast)


def _parse_rollback(text: str, toks: list[Token]) -> ParsedStatement:
    rest = toks[1:]
    if rest and _word(rest[0]) in ("TRANSACTION", "WORK"):
        rest = rest[1:]
    if not rest:
        return ParsedStatement("ROLLBACK", text)
    if _word(rest[0]) != "TO":
        raise SqlSyntaxError("syntax error: expected ROLLBACK [TO [SAVEPOINT] name]")
    rest = rest[1:]
    if rest and _word(rest[0]) == "SAVEPOINT":
        rest = rest[1:]
    if len(rest) != 1:
        raise SqlSyntaxError("syntax error: expected ROLLBACK TO [SAVEPOINT] name")
    return ParsedStatement("ROLLBACK TO", text, savepoint=_ident(rest[0]))


@dataclass
class _Edit:
    start: int
    end: int  # exclusive
    replacement: str


def _parse_sql(text: str, toks: list[Token]) -> ParsedStatement:
    stmt = ParsedStatement("", text)
    edits: list[_Edit] = []
    w0, w1 = _word(toks[0]), _word(toks[1]) if len(toks) > 1 else ""
    if w0 == "UPSERT":
        stmt.upsert = True
        edits.append(_Edit(toks[0].start, toks[0].end + 1, "INSERT"))
    elif w0 == "REPLACE" and w1 == "INTO":
        edits.append(_Edit(toks[0].start, toks[0].end + 1, "INSERT OR REPLACE"))
    elif w0 == "CREATE":
        words = [_word(t) for t in toks[:4]]
        if "INDEX" in words:
            edits.extend(_cut_storing(toks, stmt))
        elif "TABLE" in words:
            edits.extend(_cut_table_extras(toks, stmt))
    if w0 in ("CREATE", "ALTER"):
        edits.extend(_cut_generated_always(toks))
    named = False
    n_params = 0
    hex_literals = False
    for prev, tok in zip([None, *toks], toks):
        # x'0a1b' / X'0a1b' blob literals: the default dialect has no hex strings, so they are
        # parsed as a marker call and turned into exp.HexString below
        if (
            prev is not None
            and tok.token_type == TokenType.STRING
            and prev.token_type == TokenType.VAR
            and prev.text in ("x", "X")
            and prev.end + 1 == tok.start
        ):
            edits.append(_Edit(prev.start, prev.end + 1, _HEX_MARKER))
            edits.append(_Edit(tok.start, tok.start, "("))
            edits.append(_Edit(tok.end + 1, tok.end + 1, ")"))
            hex_literals = True
    for tok in toks:
        if tok.token_type == TokenType.PLACEHOLDER and tok.text == "?":
            edits.append(_Edit(tok.start, tok.end + 1, f":{_PARAM_PREFIX}{n_params}"))
            n_params += 1
        elif tok.token_type == TokenType.COLON:
            named = True
    rewritten = _apply(text, edits)
    ast = _sqlglot_parse(rewritten, text, edits)
    for node in ast.find_all(exp.Placeholder):
        name = node.this
        if isinstance(name, str) and name.startswith(_PARAM_PREFIX) and name[len(_PARAM_PREFIX) :].isdigit():
            node.set("this", None)
            node.meta["param_index"] = int(name[len(_PARAM_PREFIX) :])
    if hex_literals:
        for node in list(ast.find_all(exp.Anonymous)):
            if str(node.this).lower() == _HEX_MARKER.lower() and node.expressions:
                digits = node.expressions[0].this
                # sqlglot cannot print an empty HexString (int('', 16)), and its text is needed
                # (names, partial-index matching): x'' is the empty text cast to BYTES instead
                node.replace(exp.HexString(this=digits) if digits else
                             exp.cast(exp.Literal.string(""), exp.DataType.build("BYTES", udt=True)))
    stmt.ast = ast
    stmt.param_count = n_params
    stmt.named_params = named and n_params == 0
    stmt.kind = _kind_of(ast)
    return stmt


def _apply(text: str, edits: list[_Edit]) -> str:
    out = []
    pos = 0
    for e in sorted(edits, key=lambda e: e.start):
        out.append(text[pos : e.start])
        out.append(e.replacement)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def _original_offset(rewritten: str, line: int, col: int, edits: list[_Edit]) -> int:
    """Where (line, col) of the rewritten text (``?`` -> ``:__pN`` ...) was in the original."""
    pos = 0
    for _ in range(line - 1):
        nl = rewritten.find("\n", pos)
        if nl < 0:
            break
        pos = nl + 1
    target = pos + max(col, 1) - 1
    shift = 0  # rewritten offset - original offset, so far
    for e in sorted(edits, key=lambda e: e.start):
        start_rw = e.start + shift
        if target < start_rw:
            break
        end_rw = start_rw + len(e.replacement)
        if target < end_rw:
            return e.start  # inside a replacement: point at what it replaced
        shift += len(e.replacement) - (e.end - e.start)
    return target - shift


def _sqlglot_parse(sql: str, original: str, edits: list[_Edit] | None = None) -> exp.Expression:
    try:
        trees = sqlglot.parse(sql)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        line, col = err.get("line"), err.get("col")
        desc = describe_parse_error(err.get("description") or str(e))
        near = err.get("highlight")
        near_txt = f' near "{near}"' if near else ""
        if line:
            located = SqlSyntaxError(f"syntax error{near_txt}: {desc}")
            located.offset = _original_offset(sql, line, col or 1, edits or [])  # type: ignore[attr-defined]
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
    # sqlglot accepts a few truncated forms silently; they are syntax errors in SQL.
    for node in tree.walk():
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
        return f"expected {operand} after {_OPERATORS.get(node, node)}"
    return _SQLGLOT_TERMS.get(description, description)


def _drop_command_fallback(record: logging.LogRecord) -> bool:
    """sqlglot logs "Falling back to parsing as a 'Command'" for statements it does not know;
    sqlkv refuses those with its own error, so the warning would only clutter the user's stderr."""
    return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_drop_command_fallback)


_KINDS: list[tuple[type, str]] = [
    (exp.Insert, "INSERT"),
    (exp.Update, "UPDATE"),
    (exp.Delete, "DELETE"),
    (exp.TruncateTable, "TRUNCATE"),
    (exp.Alter, "ALTER TABLE"),
    (exp.Transaction, "BEGIN"),
    (exp.Commit, "COMMIT"),
]


def _kind_of(ast: exp.Expression) -> str:
    if isinstance(ast, exp.Query):
        return "SELECT"
    if isinstance(ast, exp.Create):
        kind = str(ast.args.get("kind") or "").upper()
        return f"CREATE {kind}"
    if isinstance(ast, exp.Drop):
        kind = str(ast.args.get("kind") or "").upper()
        return f"DROP {kind}"
    if isinstance(ast, exp.Rollback):
        return "ROLLBACK TO" if ast.args.get("savepoint") else "ROLLBACK"
    for cls, kind in _KINDS:
        if isinstance(ast, cls):
            return kind
    raise ProgrammingError(f"unsupported statement: {ast.sql()[:80]}")


def _matching_paren(toks: list[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        tt = toks[j].token_type
        if tt == TokenType.L_PAREN:
            depth += 1
        elif tt == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return j
    raise SqlSyntaxError("syntax error: unbalanced parentheses")


def _names_in(toks: list[Token]) -> list[str]:
    return [_ident(t) for t in toks if t.token_type not in (TokenType.COMMA, TokenType.L_PAREN, TokenType.R_PAREN)]


def _cut_storing(toks: list[Token], stmt: ParsedStatement) -> list[_Edit]:
    """``CREATE INDEX i ON t (a) STORING (b, c)``: record b, c and cut the clause."""
    for i, tok in enumerate(toks):
        if _word(tok) in ("STORING", "COVERING", "INCLUDE") and i + 1 < len(toks):
            if toks[i + 1].token_type != TokenType.L_PAREN:
                continue
            close = _matching_paren(toks, i + 1)
            stmt.storing = _names_in(toks[i + 2 : close])
            return [_Edit(tok.start, toks[close].end + 1, "")]
    return []


def _cut_generated_always(toks: list[Token]) -> list[_Edit]:
    """``GENERATED ALWAYS AS (expr) STORED|VIRTUAL`` -> ``AS (expr) STORED|VIRTUAL``: the form
    sqlglot's default dialect parses as a computed column (it rejects the long one)."""
    edits: list[_Edit] = []
    for i in range(len(toks) - 3):
        if [_word(t) for t in toks[i:i + 3]] != ["GENERATED", "ALWAYS", "AS"]:
            continue
        if toks[i + 3].token_type != TokenType.L_PAREN:
            continue  # GENERATED ALWAYS AS IDENTITY
        close = _matching_paren(toks, i + 3)
        if close + 1 < len(toks) and _word(toks[close + 1]) in ("STORED", "VIRTUAL"):
            edits.append(_Edit(toks[i].start, toks[i + 2].start, ""))
    return edits


def _cut_table_extras(toks: list[Token], stmt: ParsedStatement) -> list[_Edit]:
    """Cut ``FAMILY f (cols)`` elements; record and drop ASC/DESC in table-level key lists."""
    edits: list[_Edit] = []
    open_i = next((i for i, t in enumerate(toks) if t.token_type == TokenType.L_PAREN), None)
    if open_i is None:
        return edits
    close_i = _matching_paren(toks, open_i)
    # Element boundaries: commas at depth 1.
    bounds = []
    depth = 0
    start = open_i + 1
    for j in range(open_i, close_i + 1):
        tt = toks[j].token_type
        if tt == TokenType.L_PAREN:
            depth += 1
        elif tt == TokenType.R_PAREN:
            depth -= 1
        if (tt == TokenType.COMMA and depth == 1) or j == close_i:
            bounds.append((start, j))  # tokens [start, j)
            start = j + 1
    for idx, (s, e) in enumerate(bounds):
        elem = toks[s:e]
        if not elem:
            continue
        words = [_word(t) for t in elem]
        if words[0] == "FAMILY":
            name_tok = elem[1] if len(elem) > 1 and elem[1].token_type != TokenType.L_PAREN else None
            paren = next(i for i, t in enumerate(elem) if t.token_type == TokenType.L_PAREN)
            cols = _names_in(elem[paren + 1 : _matching_paren(elem, paren)])
            stmt.families.append((_ident(name_tok) if name_tok else f"fam_{len(stmt.families) + 1}", cols))
            # cut the element and the comma before it
            cut_start = toks[s - 1].start if toks[s - 1].token_type == TokenType.COMMA else elem[0].start
            edits.append(_Edit(cut_start, elem[-1].end + 1, ""))
            continue
        key_words = [i for i, w in enumerate(words) if w in ("KEY", "PRIMARY KEY", "UNIQUE")]
        if key_words:
            key_at = key_words[0]
            if key_at + 1 < len(elem) and elem[key_at + 1].token_type == TokenType.L_PAREN:
                paren = key_at + 1
                close = _matching_paren(elem, paren)
                prev_name = None
                for t in elem[paren + 1 : close]:
                    w = _word(t)
                    if w in ("ASC", "DESC"):
                        if prev_name is not None and w == "DESC":
                            stmt.key_directions[prev_name] = True
                        edits.append(_Edit(t.start, t.end + 1, ""))
                    elif t.token_type != TokenType.COMMA:
                        prev_name = _ident(t)
    return edits
