"""A quick tokenizer for plain statements: sqlglot's tokens, made by one regular expression.

sqlglot's tokenizer steps through the text a character at a time (about 60 us for
``SELECT id, sku, amount FROM orders ORDER BY sku LIMIT 10``, a tenth of that text's first
execution). `quick_tokens` makes the same tokens -- type, text, line, column, start, end --
for texts made only of the common pieces: words, unquoted integers and decimals, plain
``'...'`` strings, and the punctuation of ordinary expressions. It returns None at the first
thing it does not make exactly as sqlglot does (comments, quoted identifiers, ``''`` and
backslashes in strings, ``1e5``, ``12abc``, ``x'..'``, ``:``, ``$``, words that may begin a
multi-word keyword other than ``ORDER BY``/``GROUP BY``, statements sqlglot reads as commands,
any other character), and the caller tokenizes with sqlglot. tests/sql/test_parse_scan.py
compares the two on every statement of the test corpus it can find.
"""

from __future__ import annotations

import re

from sqlglot.tokens import Token, TokenType

from sqlkv.sql.parse_errors import SQLGLOT_DIALECT

_TOKENIZER = SQLGLOT_DIALECT.tokenizer_class
_KEYWORDS: dict[str, TokenType] = _TOKENIZER.KEYWORDS
_SINGLE: dict[str, TokenType] = _TOKENIZER.SINGLE_TOKENS
_COMMANDS = frozenset(_TOKENIZER.COMMANDS)

# Whitespace, then one piece: a word, a number, a plain string, or punctuation (one character:
# the longest operator starting there is found below). Anything else does not match.
_PIECE = re.compile(
    r"([ \t\n]*)(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>[0-9]+(?:\.[0-9]+)?)"
    r"|'(?P<string>[^'\\\n\r]*)'|(?P<punct>[(),.*+\-/%=<>;?|!]))"
)
_END = re.compile(r"[ \t\n]*\Z")

# What may follow a word or a number in the text for sqlglot to end it there as this does.
_AFTER_WORD = frozenset(" \t\n") | frozenset(_SINGLE) - {"'", '"', "`"}
_AFTER_NUMBER = _AFTER_WORD - {"."}


def _trie_words() -> list[str]:
    """The keywords sqlglot's tokenizer matches character by character (those holding a space or
    punctuation), comment and string openers included."""
    out: list[str] = []
    stack: list[tuple[dict, str]] = [(_TOKENIZER._KEYWORD_TRIE, "")]
    while stack:
        node, prefix = stack.pop()
        for key, sub in node.items():
            if key == 0:
                out.append(prefix)
            else:
                stack.append((sub, prefix + key))
    return out


_TRIE_WORDS = _trie_words()
# Words that may start a multi-word keyword (ORDER BY, PRIMARY KEY, USER-DEFINED...): sqlglot
# may join them with what follows, so only the two common ones are made here.
_FIRST_WORDS = frozenset(re.match(r"[A-Z0-9_]*", w).group() for w in _TRIE_WORDS
                         if w[:1].isalpha() and not w.endswith("'"))  # N'...': a quote after a word stops the scan
_JOINED = {"ORDER": "ORDER BY", "GROUP": "GROUP BY"}
_BY = re.compile(r" +(?:BY|by|By|bY)(?![A-Za-z0-9_])")
# Operators of punctuation only, longest first: `<=` before `<`. Comment openers stop the scan.
_OPERATORS: dict[str, list[str]] = {}
for _word in sorted((w for w in _TRIE_WORDS if not w[:1].isalpha() and w in _KEYWORDS), key=len, reverse=True):
    _OPERATORS.setdefault(_word[0], []).append(_word)
_STOPS = ("--", "/*")


def quick_tokens(sql: str) -> list[Token] | None:
    """sqlglot's (default dialect's) tokens of ``sql``, or None when ``sql`` holds something
    this scanner leaves to sqlglot."""
    out: list[Token] = []
    append = out.append
    match = _PIECE.match
    pos, size = 0, len(sql)
    line, line_start = 1, 0  # the current line and where it starts in the text
    lines = "\n" in sql
    while pos < size:
        found = match(sql, pos)
        if found is None:
            return None if _END.match(sql, pos) is None else out
        start = found.end(1)
        if lines and sql.count("\n", pos, start):
            line += sql.count("\n", pos, start)
            line_start = sql.rfind("\n", pos, start) + 1
        kind = found.lastgroup
        end = found.end()
        if kind == "word":
            if end < size and sql[end] not in _AFTER_WORD:
                return None
            text = found.group("word")
            upper = text.upper()
            if upper in _FIRST_WORDS:
                joined = _JOINED.get(upper)
                more = _BY.match(sql, end) if joined is not None else None
                if more is None or more.end() < size and sql[more.end()] not in _AFTER_WORD:
                    return None
                text, token_type, end = joined, _KEYWORDS[joined], more.end()
            else:
                token_type = _KEYWORDS.get(upper, TokenType.VAR)
                if token_type in _COMMANDS:
                    return None
        elif kind == "number":
            if end < size and sql[end] not in _AFTER_NUMBER:
                return None
            text, token_type = found.group("number"), TokenType.NUMBER
        elif kind == "string":
            if end < size and sql[end] == "'":  # '' inside a string: sqlglot unescapes it
                return None
            text, token_type = found.group("string"), TokenType.STRING
        else:
            text, token_type = _operator(sql, start)
            if token_type is None:
                return None
            end = start + len(text)
        append(Token(token_type, text, line, end - line_start, start, end - 1, []))
        pos = end
    return out


def _operator(sql: str, start: int) -> tuple[str, TokenType | None]:
    """The operator at ``start`` (the longest sqlglot knows), or a None type for a comment."""
    if sql.startswith(_STOPS, start):
        return "", None
    for word in _OPERATORS.get(sql[start], ()):
        if sql.startswith(word, start):
            return word, _KEYWORDS[word]
    char = sql[start]
    return char, _SINGLE[char]
