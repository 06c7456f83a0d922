"""Parsing: SQL text -> `ParsedStatement` (a sqlglot AST plus what sqlglot has no node for).

``UPSERT INTO users VALUES (?, ?)`` goes through three steps:

1. `split_statements` tokenizes the text (parse_scan.py's regular expression for plain texts,
   else sqlglot's tokenizer) and cuts it at top-level semicolons, remembering each statement's
   line and column for error messages.
2. `_rewrite` looks at the statement's tokens for sqlkv/CockroachDB syntax sqlglot lacks and
   rewrites the text: ``UPSERT`` becomes ``INSERT`` (flag ``upsert``), ``REPLACE INTO`` becomes
   ``INSERT OR REPLACE INTO``, ``STORING (...)`` and ``FAMILY f (...)`` clauses are cut out and
   kept aside, ``ASC``/``DESC`` inside a table-level ``PRIMARY KEY (...)`` are recorded and
   removed, and every ``?`` becomes a named placeholder ``:__pN`` so that, after parsing, each
   `exp.Placeholder` knows its position: ``node.meta["param_index"] = N`` (``this`` reset to
   None so it prints as ``?`` again). Transaction control (BEGIN, COMMIT, SAVEPOINT, RELEASE,
   ROLLBACK [TO]), ``EXPLAIN [ANALYZE]`` and ``CHECK DATABASE`` are recognised here directly.
3. sqlglot parses the rewritten text (from tokens made out of the original ones when the
   only rewrite numbered the parameters, parse_params.py; a plain SELECT's tree is built from
   its tokens directly, parse_plain.py); a `ParseError`/`TokenError` becomes
   a ProgrammingError with the line and column in the original text. The later checks and
   rewrites share one walk of the tree (parse_tree.py).

`parse_statement` is cached per SQL text (LRU), process-wide: every connection shares it.
Callers must not mutate the cached AST: the planner plans from a copy (`parse_tree.copy_tree`)
unless the statement is made only of nodes it never edits (``shared_tree``).

"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from sqlkv.errors import NotSupportedError, ProgrammingError, SqlSyntaxError
from sqlkv.sql.asof import find_as_of, parse_as_of_expr
from sqlkv.sql.depth import too_deep
from sqlkv.sql.headers import label_select_items
from sqlkv.sql.normalize import normalized_from_tokens
from sqlkv.sql.parse_alter import alter_table_special
from sqlkv.sql.parse_analyze import analyze_target
from sqlkv.sql.parse_edits import (
    Edit,
    apply_edits,
    cut_generated_always,
    cut_immediate_timing,
    cut_overriding,
    cut_sequence_defaults,
    cut_inverted,
    cut_storing,
    cut_table_extras,
    token_ident,
    token_word,
)
from sqlkv.sql.parse_errors import SQLGLOT_DIALECT, located_error, sqlglot_parse
from sqlkv.sql.parse_txn import rollback_savepoint
from sqlkv.sql.parse_settings import is_time_zone_show, parse_set
from sqlkv.sql.parse_extras import INT4_MARKER, after_operand, bytes_literal, type_position
from sqlkv.sql.parse_jsonb import arrow_edits, jsonb_operator_edit, jsonb_possible, operator_part
from sqlkv.sql.parse_params import PARAM_PREFIX, number_placeholders, numbered_tokens
from sqlkv.sql.parse_scan import quick_tokens
from sqlkv.sql.parse_refusals import REFUSABLE_NODES, refuse_ignored_clauses, standard_limits
from sqlkv.sql.parse_srf import rewrite_select_unnest
from sqlkv.sql.parse_plain import plain_select, plain_statement
from sqlkv.sql.parse_tree import nodes_of_type, plans_shared, statement_kind
from sqlkv.sql.show import show_query


_HEX_MARKER = "__sqlkv_hex"


_ARROWS = frozenset({TokenType.ARROW, TokenType.DARROW})


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
    inverted: bool = False  # CREATE INVERTED INDEX (the word is cut before sqlglot parses)
    families: list[tuple[str, list[str], str]] = field(default_factory=list)  # name, columns, layout
    key_directions: dict[str, bool] = field(default_factory=dict)  # column -> desc, table-level PK/UNIQUE
    # CREATE TABLE t (..., INDEX i (a), UNIQUE INDEX (b)): cut out, run after as CREATE INDEX texts
    table_indexes: list[str] = field(default_factory=list)
    shows: tuple[str, bool] | None = None  # SHOW/DESCRIBE: (relation named, views accepted)
    overriding: bool = False  # INSERT ... OVERRIDING SYSTEM VALUE (values for GENERATED ALWAYS identities)
    zone: str | None = None  # SET TIME ZONE: the zone named (None: the default, UTC)
    as_of: exp.Expression | None = None  # SELECT/BEGIN ... AS OF SYSTEM TIME <expr> (asof.py)
    target: str | None = None  # ANALYZE <table> (None: every table)
    normalized: str | None = None  # the statement_stats key (normalize.py), made from the parse's tokens
    sequence_calls: bool | None = None  # calls nextval or setval (None: not known from the parse)
    shared_tree: bool = False  # planned from ``ast`` itself, not a copy (parse_tree.plans_shared)
    # a shared tree's nodes as the parse walked them: the planner reads its facts from these
    nodes: list[exp.Expression] | None = None

    @property
    def writes(self) -> bool:
        """Whether running it may write (an EXPLAIN only when ANALYZE runs a writing statement)."""
        if self.kind == "EXPLAIN":
            return self.explain_analyze and (self.inner is None or self.inner.writes)
        return self.kind not in ("SELECT", "CHECK DATABASE")


def _tokenize(sql: str) -> list[Token]:
    quick = quick_tokens(sql)  # the common statements, without sqlglot's per-character loop
    if quick is not None:
        return quick
    try:
        return SQLGLOT_DIALECT.tokenize(sql)
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
    if not tokens or tokens[0].token_type != TokenType.SELECT:  # a SELECT is none of those refused
        _refuse_unsupported(tokens)
    pieces = [tokens] if tokens and ";" not in sql else _split_tokens(tokens)  # ";": maybe several
    if not pieces:
        raise ProgrammingError("empty statement")
    if len(pieces) > 1:
        raise ProgrammingError("cannot execute several statements at once; use execute_script")
    toks = pieces[0]
    start = toks[0].start
    text = sql[start : toks[-1].end + 1]
    if start != 0:  # tokens carry offsets into the text they were made from
        toks = _tokenize(text)
    try:
        normalized = normalized_from_tokens(text, toks)
        stmt = _parse_tokens(text, toks)
        stmt.normalized = normalized
        return stmt
    except RecursionError:
        raise too_deep(text) from None
    except ProgrammingError as e:
        offset = getattr(e, "offset", None)
        if offset is None:
            raise
        raise located_error(sql, start + offset, e.args[0]) from None


def _refuse_unsupported(tokens: list[Token]) -> None:
    """Clear errors for SQLite statements sqlkv does not have (before splitting: a trigger
    body holds semicolons)."""
    words = [token_word(t) for t in tokens[:4]]
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


def _parse_tokens(text: str, toks: list[Token]) -> ParsedStatement:
    if toks[0].token_type == TokenType.SELECT:  # none of the statements below
        return _parse_sql(text, toks)
    words = [token_word(t) for t in toks[:4]] + ["", "", "", ""]
    w0, w1 = words[0], words[1]
    if w0 in ("BEGIN", "START") and (w0 == "BEGIN" or w1 == "TRANSACTION"):
        return _parse_begin(text, toks)
    if w0 in ("COMMIT", "END"):
        return ParsedStatement("COMMIT", text)
    if w0 == "ROLLBACK":
        savepoint = rollback_savepoint(toks)
        return ParsedStatement("ROLLBACK" if savepoint is None else "ROLLBACK TO", text, savepoint=savepoint)
    if w0 == "SAVEPOINT" and len(toks) == 2:
        return ParsedStatement("SAVEPOINT", text, savepoint=token_ident(toks[1]))
    if w0 == "RELEASE":
        rest = toks[2:] if w1 == "SAVEPOINT" else toks[1:]
        if len(rest) != 1:
            raise SqlSyntaxError("syntax error: expected RELEASE [SAVEPOINT] name")
        return ParsedStatement("RELEASE", text, savepoint=token_ident(rest[0]))
    if w0 in ("SHOW", "DESCRIBE") or (w0 == "DESC" and len(toks) == 2):
        if w0 == "SHOW":  # sqlglot's tokenizer keeps the rest of a SHOW as one string
            toks = [toks[0], *_tokenize(text[toks[0].end + 1 :])]
            if is_time_zone_show([token_word(t) for t in toks]):
                return ParsedStatement("SHOW TIME ZONE", text)
        show = show_query([token_word(t) for t in toks], toks)
        stmt = _parse_sql(show.sql, _tokenize(show.sql))
        stmt.sql = text
        stmt.shows = (show.table, show.views_too) if show.table is not None else None
        return stmt
    if w0 in ("SET", "RESET"):
        if w0 == "SET" and len(toks) > 1 and toks[1].token_type == TokenType.COMMAND:
            toks = [toks[0], *_tokenize(text[toks[0].end + 1 :])]
        return ParsedStatement("SET TIME ZONE", text, zone=parse_set(toks))
    if w0 in ("ANALYZE", "ANALYSE"):
        return ParsedStatement("ANALYZE", text, target=analyze_target(toks))
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
        special = alter_table_special(text, toks)
        if special is not None:
            return ParsedStatement("ALTER TABLE", text, ast=special)
    return _parse_sql(text, toks)


def _parse_begin(text: str, toks: list[Token]) -> ParsedStatement:
    """``BEGIN [TRANSACTION]`` and ``BEGIN [TRANSACTION] AS OF SYSTEM TIME <expr>`` (a read-only
    transaction at that time)."""
    stmt = ParsedStatement("BEGIN", text)
    clause = find_as_of(toks)
    if clause is not None:
        start, end = clause
        rest = [token_word(t) for t in toks[1:start]]
        if rest not in ([], ["TRANSACTION"]) or end != len(toks):
            raise SqlSyntaxError("syntax error: expected BEGIN [TRANSACTION] AS OF SYSTEM TIME <timestamp>")
        stmt.as_of, stmt.param_count = _as_of_expr(text, toks, start, end, 0)
    return stmt


def _as_of_expr(text: str, toks: list[Token], start: int, end: int, first_param: int) -> tuple[exp.Expression, int]:
    """The clause's parsed expression and the parameter count after it (its ``?`` numbered
    from ``first_param``, in statement order)."""
    base = toks[start + 4].start
    edits = []
    n = first_param
    for tok in toks[start + 4 : end]:
        if tok.token_type == TokenType.PLACEHOLDER and tok.text == "?":
            edits.append(Edit(tok.start - base, tok.end + 1 - base, f":{PARAM_PREFIX}{n}"))
            n += 1
    node = parse_as_of_expr(apply_edits(text[base : toks[end - 1].end + 1], edits))
    number_placeholders(node)
    return node, n


# `:name` parameters and `::` casts: the token loop of `_parse_sql` looks at these
_COLONS = frozenset({TokenType.COLON, TokenType.QDCOLON})


def _parse_sql(text: str, toks: list[Token]) -> ParsedStatement:
    stmt = ParsedStatement("", text)
    edits: list[Edit] = []
    w0, w1 = token_word(toks[0]), token_word(toks[1]) if len(toks) > 1 else ""
    if toks[0].token_type == TokenType.VAR and w0 != "UPSERT":  # `SELEC x FROM t`: blame SELEC
        err = ProgrammingError(f' near "{toks[0].text}": expected a statement such as SELECT')
        err.offset = toks[0].start  # type: ignore[attr-defined]
        raise err
    if w0 == "UPSERT":
        stmt.upsert = True
        edits.append(Edit(toks[0].start, toks[0].end + 1, "INSERT"))
    elif w0 == "REPLACE" and w1 == "INTO":
        edits.append(Edit(toks[0].start, toks[0].end + 1, "INSERT OR REPLACE"))
    elif w0 == "CREATE":
        words = [token_word(t) for t in toks[:4]]
        if "INDEX" in words:
            edits.extend(cut_storing(toks, stmt))
            edits.extend(cut_inverted(toks, stmt))
        elif "TABLE" in words:
            edits.extend(cut_table_extras(toks, stmt, text))
        elif "SEQUENCE" in words:
            edits.extend(cut_sequence_defaults(toks))
    if w0 in ("CREATE", "ALTER"):
        edits.extend(cut_generated_always(toks))
        edits.extend(cut_immediate_timing(toks))
    if w0 == "INSERT":
        overriding = cut_overriding(toks)
        if overriding is not None:
            stmt.overriding = True
            edits.append(overriding)
    named = False
    n_params = 0
    hex_literals = False
    kinds = {t.token_type for t in toks}  # the rewrites below look only for tokens present
    clause = find_as_of(toks) if "SYSTEM" in text.upper() else None
    if clause is not None:  # cut out; its expression is parsed apart (asof.py)
        edits.append(Edit(toks[clause[0]].start, toks[clause[1] - 1].end + 1, " "))
    for prev, tok in zip([None, *toks], toks) if TokenType.STRING in kinds else ():
        # x'0a1b' / X'0a1b' blob literals: the default dialect has no hex strings, so they are
        # parsed as a marker call and turned into exp.HexString below
        if (
            prev is not None
            and tok.token_type == TokenType.STRING
            and prev.token_type == TokenType.VAR
            and prev.text in ("x", "X", "b", "B")
            and prev.end + 1 == tok.start
        ):
            if prev.text in ("b", "B"):  # CockroachDB's b'abc' bytes literal, as its hex digits
                edits.append(Edit(prev.start, tok.end + 1, f"{_HEX_MARKER}('{bytes_literal(tok.text).hex()}')"))
                hex_literals = True
                continue
            edits.append(Edit(prev.start, prev.end + 1, _HEX_MARKER))
            edits.append(Edit(tok.start, tok.start, "("))
            edits.append(Edit(tok.end + 1, tok.end + 1, ")"))
            hex_literals = True
    ddl = w0 in ("CREATE", "ALTER")
    int4, tilde = TokenType.INT in kinds, TokenType.TILDE in kinds
    arrows, jsonb = not kinds.isdisjoint(_ARROWS), jsonb_possible(toks, kinds)
    rewrites = int4 or tilde or arrows or jsonb or clause is not None or not kinds.isdisjoint(_COLONS)
    if not rewrites and TokenType.PLACEHOLDER in kinds:  # most texts: only their `?` to number
        for tok in toks:
            if tok.token_type == TokenType.PLACEHOLDER and tok.text == "?":
                edits.append(Edit(tok.start, tok.start + 1, f":{PARAM_PREFIX}{n_params}"))
                n_params += 1
    for k, tok in enumerate(toks) if rewrites else ():
        if int4 and tok.token_type == TokenType.INT and tok.text.upper() == "INT4" and type_position(toks, k, ddl):
            edits.append(Edit(tok.start, tok.end + 1, INT4_MARKER))
        if tilde and tok.token_type == TokenType.TILDE and after_operand(toks, k):
            # PostgreSQL's binary `a ~ 'pattern'` (and `!~`): sqlglot's default dialect reads RLIKE
            edits.append(Edit(tok.start, tok.end + 1, " RLIKE "))
        if clause is not None and clause[0] <= k < clause[1]:
            if k == clause[0] + 4:
                stmt.as_of, n_params = _as_of_expr(text, toks, clause[0], clause[1], n_params)
            continue
        if arrows:
            edits.extend(arrow_edits(toks, k))  # issue 15 (parse_jsonb.py): -> ->> #> #>> and the others
        if jsonb:
            jsonb_edit = jsonb_operator_edit(toks, k)
            if jsonb_edit is not None:
                edits.append(jsonb_edit)
                if tok.text == "?":
                    continue
        if tok.token_type == TokenType.PLACEHOLDER and tok.text == "?" and not (jsonb and operator_part(toks, k)) \
                or tok.token_type == TokenType.QDCOLON:  # `?::JSONB`: a parameter, then a cast
            # after an adjacent ':' (an array slice a[?:?]) a space keeps ':' ':__p1' from reading as '::'
            space = " " if k and toks[k - 1].token_type == TokenType.COLON and toks[k - 1].end + 1 == tok.start else ""
            edits.append(Edit(tok.start, tok.start + 1, f"{space}:{PARAM_PREFIX}{n_params}"))
            n_params += 1
        elif tok.token_type == TokenType.COLON:
            named = True
    # a plain SELECT whose only edits number its `?`: read from its own tokens, `?` as `:__pn`
    nodes: list[exp.Expression] = []  # the tree's nodes as first parsed: one list serves every step below
    # (without `?`, what sqlglot_parse would try first: no other SELECT edit goes without a rewrite)
    plain = toks[0].token_type == TokenType.SELECT and not rewrites and not hex_literals and (n_params or not edits)
    ast = plain_select(toks, PARAM_PREFIX if n_params else None, nodes) if plain else None
    if ast is not None:
        return plain_statement(stmt, ast, nodes, n_params)
    if ast is None:
        ast = sqlglot_parse(apply_edits(text, edits), text, edits,
                            tokens=numbered_tokens(toks, edits) if edits else toks, walked=nodes)
    classes = {type(n) for n in nodes}
    refuse_ignored_clauses(ast, nodes_of_type(nodes, REFUSABLE_NODES, classes))
    number_placeholders(ast, nodes_of_type(nodes, exp.Placeholder, classes))
    if exp.Fetch in classes or exp.Limit in classes:
        standard_limits(nodes_of_type(nodes, (exp.Fetch, exp.Limit), classes))
    if hex_literals:
        for node in nodes_of_type(nodes, exp.Anonymous, classes):
            if str(node.this).lower() == _HEX_MARKER.lower() and node.expressions:
                digits = node.expressions[0].this
                # sqlglot cannot print an empty HexString (int('', 16)), and its text is needed
                # (names, partial-index matching): x'' is the empty text cast to BYTES instead
                node.replace(exp.HexString(this=digits) if digits else
                             exp.cast(exp.Literal.string(""), exp.DataType.build("BYTES", udt=True)))
    for node in nodes_of_type(nodes, exp.ToChar, classes):
        # to_char(v, fmt): sqlglot's node cannot print its format argument; a plain call can
        args = [node.this] + ([node.args["format"]] if node.args.get("format") is not None else [])
        node.replace(exp.Anonymous(this="to_char", expressions=args))
    for dtype in nodes_of_type(nodes, exp.DataType, classes) if int4 else ():  # only those INT4 became
        if str(dtype.args.get("kind") or "").upper() == INT4_MARKER:
            dtype.set("kind", "INT4")
    label_select_items(ast, text, toks)  # headers as typed (sqlkv.sql.headers)
    calls = [str(n.this).lower() for n in nodes_of_type(nodes, exp.Anonymous, classes)]
    if exp.Unnest in classes or "jsonb_path_query" in calls:
        rewrite_select_unnest(ast)  # SELECT unnest(a): a lateral unnest in FROM (parse_srf.py)
    stmt.sequence_calls = "nextval" in calls or "setval" in calls
    stmt.shared_tree = plans_shared(ast, classes)
    if stmt.shared_tree:
        stmt.nodes = nodes
    stmt.ast = ast
    stmt.param_count = n_params
    stmt.named_params = named and n_params == 0
    stmt.kind = statement_kind(ast)
    if stmt.as_of is not None and stmt.kind != "SELECT":
        raise NotSupportedError(f"AS OF SYSTEM TIME is only allowed on SELECT (and BEGIN): {stmt.kind} "
                                f"writes, and a read of the past cannot write")
    return stmt
