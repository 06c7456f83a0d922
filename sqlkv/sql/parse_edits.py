"""Text edits made before sqlglot parses a statement, and mapping positions back.

``CREATE TABLE t (a INT, b INT, FAMILY f (b)) STORING ...``: sqlglot has no node for
``FAMILY``/``STORING`` clauses, so `cut_table_extras` and `cut_storing` record them on the
`ParsedStatement` and return the `Edit`s that cut them from the text. `apply_edits` makes the
text sqlglot parses; `original_offset` maps a position sqlglot reports in it back to the
user's text, so syntax errors point where the user wrote. ``INDEX i (a)`` elements inside
CREATE TABLE are cut the same way and kept as CREATE INDEX texts (`inline_index`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot.tokens import Token, TokenType

from sqlkv.errors import ProgrammingError, SqlSyntaxError

if TYPE_CHECKING:
    from sqlkv.sql.parse import ParsedStatement


def token_word(tok: Token | None) -> str:
    if tok is None or tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        return ""
    return tok.text.upper()


def token_ident(tok: Token) -> str:
    return tok.text if tok.token_type == TokenType.IDENTIFIER else tok.text.lower()


@dataclass
class Edit:
    start: int
    end: int  # exclusive
    replacement: str


def _applied(edits: list[Edit]) -> list[Edit]:
    """The edits in text order, without those inside a span an earlier one replaced
    (``INDEX i (id) WHERE j ? 'x'`` cut from CREATE TABLE takes its ``?`` edit with it)."""
    out: list[Edit] = []
    for e in sorted(edits, key=lambda e: e.start):
        if not out or e.start >= out[-1].end:
            out.append(e)
    return out


def apply_edits(text: str, edits: list[Edit]) -> str:
    out = []
    pos = 0
    for e in _applied(edits):
        out.append(text[pos : e.start])
        out.append(e.replacement)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def original_offset(rewritten: str, line: int, col: int, edits: list[Edit]) -> int:
    """Where (line, col) of the rewritten text (``?`` -> ``:__pN`` ...) was in the original."""
    pos = 0
    for _ in range(line - 1):
        nl = rewritten.find("\n", pos)
        if nl < 0:
            break
        pos = nl + 1
    target = pos + max(col, 1) - 1
    shift = 0  # rewritten offset - original offset, so far
    for e in _applied(edits):
        start_rw = e.start + shift
        if target < start_rw:
            break
        end_rw = start_rw + len(e.replacement)
        if target < end_rw:
            return e.start  # inside a replacement: point at what it replaced
        shift += len(e.replacement) - (e.end - e.start)
    return target - shift


def matching_paren(toks: list[Token], i: int) -> int:
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
    return [token_ident(t) for t in toks if t.token_type not in (TokenType.COMMA, TokenType.L_PAREN, TokenType.R_PAREN)]


def cut_storing(toks: list[Token], stmt: ParsedStatement) -> list[Edit]:
    """``CREATE INDEX i ON t (a) STORING (b, c)``: record b, c and cut the clause."""
    for i, tok in enumerate(toks):
        if token_word(tok) in ("STORING", "COVERING", "INCLUDE") and i + 1 < len(toks):
            if toks[i + 1].token_type != TokenType.L_PAREN:
                continue
            close = matching_paren(toks, i + 1)
            stmt.storing = _names_in(toks[i + 2 : close])
            return [Edit(tok.start, toks[close].end + 1, "")]
    return []


def cut_inverted(toks: list[Token], stmt: ParsedStatement) -> list[Edit]:
    """``CREATE [UNIQUE] INVERTED INDEX``: record it and cut the word (sqlglot has no such node)."""
    for tok in toks[1:3]:
        if token_word(tok) == "INVERTED":
            stmt.inverted = True
            return [Edit(tok.start, tok.end + 1, "")]
    return []


def cut_table_extras(toks: list[Token], stmt: ParsedStatement, text: str = "") -> list[Edit]:
    """Cut ``FAMILY f (cols)`` and ``[UNIQUE] INDEX`` elements; record and drop ASC/DESC in
    table-level key lists."""
    edits: list[Edit] = []
    open_i = next((i for i, t in enumerate(toks) if t.token_type == TokenType.L_PAREN), None)
    if open_i is None:
        return edits
    close_i = matching_paren(toks, open_i)
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
        words = [token_word(t) for t in elem]
        if words[0] == "INDEX" or words[:2] in (["UNIQUE", "INDEX"], ["INVERTED", "INDEX"]):
            stmt.table_indexes.append(inline_index(text, toks, open_i, elem, words[0]))
            cut_start = toks[s - 1].start if toks[s - 1].token_type == TokenType.COMMA else elem[0].start
            edits.append(Edit(cut_start, elem[-1].end + 1, ""))
            continue
        if words[0] == "FAMILY":
            name_tok = elem[1] if len(elem) > 1 and elem[1].token_type != TokenType.L_PAREN else None
            paren = next(i for i, t in enumerate(elem) if t.token_type == TokenType.L_PAREN)
            close = matching_paren(elem, paren)
            cols = _names_in(elem[paren + 1 : close])
            name = token_ident(name_tok) if name_tok else f"fam_{len(stmt.families) + 1}"
            stmt.families.append((name, cols, family_layout(elem[close + 1:], name)))
            # cut the element and the comma before it
            cut_start = toks[s - 1].start if toks[s - 1].token_type == TokenType.COMMA else elem[0].start
            edits.append(Edit(cut_start, elem[-1].end + 1, ""))
            continue
        key_words = [i for i, w in enumerate(words) if w in ("KEY", "PRIMARY KEY", "UNIQUE")]
        if key_words:
            key_at = key_words[0]
            if key_at + 1 < len(elem) and elem[key_at + 1].token_type == TokenType.L_PAREN:
                paren = key_at + 1
                close = matching_paren(elem, paren)
                prev_name = None
                for t in elem[paren + 1 : close]:
                    w = token_word(t)
                    if w in ("ASC", "DESC"):
                        if prev_name is not None and w == "DESC":
                            stmt.key_directions[prev_name] = True
                        edits.append(Edit(t.start, t.end + 1, ""))
                    elif t.token_type != TokenType.COMMA:
                        prev_name = token_ident(t)
    return edits


FAMILY_LAYOUTS = ("packed", "exploded")


def family_layout(toks: list[Token], family: str) -> str:
    """The layout of ``FAMILY f (cols) [WITH (layout = packed | exploded)]`` from the tokens
    after the column list: "packed" (the default) or "exploded"."""
    if not toks:
        return "packed"
    words = [token_word(t) for t in toks]
    shape_ok = (len(toks) == 6 and words[0] == "WITH" and toks[1].token_type == TokenType.L_PAREN
                and words[2] == "LAYOUT" and toks[3].token_type == TokenType.EQ
                and toks[5].token_type == TokenType.R_PAREN)
    if not shape_ok:
        raise SqlSyntaxError(f'syntax error in family "{family}": expected WITH (layout = packed | exploded) '
                             f"after its column list")
    layout = toks[4].text.lower()
    if layout not in FAMILY_LAYOUTS:
        raise ProgrammingError(f'family "{family}": unknown layout "{toks[4].text}" (packed or exploded)')
    return layout


def cut_sequence_defaults(toks: list[Token]) -> list[Edit]:
    """CREATE SEQUENCE: cut ``NO MINVALUE``, ``NO MAXVALUE`` and ``NO CYCLE`` -- they name the
    defaults, and sqlglot misreads them (``NO CYCLE`` alone parses as CYCLE)."""
    edits: list[Edit] = []
    for i in range(len(toks) - 1):
        if token_word(toks[i]) == "NO" and token_word(toks[i + 1]) in ("MINVALUE", "MAXVALUE", "CYCLE"):
            edits.append(Edit(toks[i].start, toks[i + 1].end + 1, ""))
    return edits


def cut_overriding(toks: list[Token]) -> Edit | None:
    """INSERT ... OVERRIDING SYSTEM VALUE (PostgreSQL; sqlglot has no node for it): cut, and
    recorded on the statement. OVERRIDING USER VALUE is left for sqlglot to refuse."""
    for i in range(len(toks) - 2):
        if [token_word(t) for t in toks[i:i + 3]] == ["OVERRIDING", "SYSTEM", "VALUE"]:
            return Edit(toks[i].start, toks[i + 2].end + 1, "")
    return None


def cut_generated_always(toks: list[Token]) -> list[Edit]:
    """``GENERATED ALWAYS AS (expr) STORED|VIRTUAL`` -> ``AS (expr) STORED|VIRTUAL``: the form
    sqlglot's default dialect parses as a computed column (it rejects the long one)."""
    edits: list[Edit] = []
    for i in range(len(toks) - 3):
        if [token_word(t) for t in toks[i:i + 3]] != ["GENERATED", "ALWAYS", "AS"]:
            continue
        if toks[i + 3].token_type != TokenType.L_PAREN:
            continue  # GENERATED ALWAYS AS IDENTITY
        close = matching_paren(toks, i + 3)
        if close + 1 < len(toks) and token_word(toks[close + 1]) in ("STORED", "VIRTUAL"):
            edits.append(Edit(toks[i].start, toks[i + 2].start, ""))
    return edits


def inline_index(text: str, toks: list[Token], open_i: int, elem: list[Token], lead: str) -> str:
    """``INDEX i (a) STORING (b)`` inside CREATE TABLE t as ``CREATE INDEX i ON t (a) STORING (b)``
    (``lead``: the element's first word, UNIQUE / INVERTED / INDEX)."""
    def text_of(a: Token, b: Token) -> str:
        return text[a.start : b.end + 1]

    start = next(i for i, t in enumerate(toks) if token_word(t) == "TABLE") + 1
    if [token_word(t) for t in toks[start : start + 3]] == ["IF", "NOT", "EXISTS"]:
        start += 3
    table = text_of(toks[start], toks[open_i - 1])
    body = elem[2:] if lead in ("UNIQUE", "INVERTED") else elem[1:]
    if not body:
        raise ProgrammingError("syntax error: INDEX in CREATE TABLE needs a column list")
    name = ""
    if body[0].token_type != TokenType.L_PAREN:
        name, body = text_of(body[0], body[0]), body[1:]
    if not body:
        raise ProgrammingError("syntax error: INDEX in CREATE TABLE needs a column list")
    kind = f"{lead} " if lead in ("UNIQUE", "INVERTED") else ""
    return f"CREATE {kind}INDEX {name} ON {table} {text_of(body[0], body[-1])}"


def cut_immediate_timing(toks: list[Token]) -> list[Edit]:
    """``NOT DEFERRABLE`` and ``INITIALLY IMMEDIATE`` (without DEFERRABLE) name what sqlkv's
    constraints are -- checked at the end of each statement -- so they are cut (sqlglot cannot
    parse NOT DEFERRABLE). ``DEFERRABLE`` itself is left for the constraint code to refuse."""
    edits: list[Edit] = []
    words = [token_word(t) for t in toks]
    for i in range(len(toks) - 1):
        pair = words[i:i + 2]
        deferrable_before = i >= 1 and words[i - 1] == "DEFERRABLE" and not (i >= 2 and words[i - 2] == "NOT")
        if pair == ["NOT", "DEFERRABLE"] or pair == ["INITIALLY", "IMMEDIATE"] and not deferrable_before:
            edits.append(Edit(toks[i].start, toks[i + 1].end + 1, ""))
    return edits
