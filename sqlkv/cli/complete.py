"""Tab completion that knows where the cursor is, as litecli's does.

``SELECT na<Tab> FROM users u JOIN orders o ON u.id = o.`` -- what is offered depends on the
clause the word is in:

- after FROM, JOIN, INTO, UPDATE, TABLE: table and view names;
- after SELECT, WHERE, ON, BY, SET, HAVING, AND/OR, an operator or a comma there: the columns
  of the tables the statement names (all columns while it names none), then those tables;
- after ``alias.``: that table's columns (aliases resolved from the text);
- ``.mo`` completes dot commands; their arguments too (``.mode`` modes, ``on|off``, table
  names for ``.schema``/``.kv``/``.indexes``..., file names for ``.read``/``.import``...);
- keywords everywhere, after what the clause wants.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from sqlkv.cli.render import MODES

KEYWORDS = sorted(set(
    """SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET DISTINCT AS AND OR NOT NULL IS IN
    BETWEEN LIKE EXISTS CASE WHEN THEN ELSE END JOIN INNER LEFT RIGHT FULL OUTER CROSS ON USING
    UNION INTERSECT EXCEPT ALL WITH RECURSIVE VALUES INSERT INTO UPDATE SET DELETE UPSERT
    RETURNING CREATE TABLE INDEX UNIQUE VIEW DROP ALTER ADD COLUMN RENAME TO PRIMARY KEY
    FOREIGN REFERENCES CHECK DEFAULT CONSTRAINT STORING FAMILY IF BEGIN COMMIT ROLLBACK
    SAVEPOINT RELEASE TRANSACTION EXPLAIN ANALYZE SHOW STATISTICS ASC DESC NULLS FIRST LAST TRUE FALSE CAST
    INT INTEGER BIGINT SMALLINT FLOAT REAL DOUBLE DECIMAL NUMERIC TEXT VARCHAR CHAR BOOL BOOLEAN
    BYTES BLOB DATE TIMESTAMP COUNT SUM AVG MIN MAX COALESCE NULLIF ABS LOWER UPPER LENGTH
    SUBSTR ROUND OVER PARTITION ROW_NUMBER RANK DENSE_RANK NOW CURRENT_TIMESTAMP""".split()
))

_TABLE_CLAUSES = frozenset({"FROM", "JOIN", "INTO", "UPDATE", "TABLE"})
_COLUMN_CLAUSES = frozenset({"SELECT", "WHERE", "ON", "BY", "SET", "HAVING", "AND", "OR", "NOT",
                             "DISTINCT", "WHEN", "THEN", "ELSE", "USING", "RETURNING", "IN"})
_CLAUSES = _TABLE_CLAUSES | _COLUMN_CLAUSES | {"VALUES", "LIMIT", "OFFSET", "AS"}
# Tokens after which a column (not a keyword) is what comes next.
_OPERATORS = frozenset("(,=<>+-*/%|")
_TOKEN = re.compile(r"[A-Za-z_]\w*|'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|[(),=<>+\-*/%|]|\S")
_SCOPE_END = r"(?:WHERE|GROUP|ORDER|HAVING|LIMIT|JOIN|INNER|LEFT|RIGHT|FULL|CROSS|ON|UNION|SET|VALUES|;|\))"
_FROM_LIST = re.compile(rf"\bFROM\s+(.*?)(?=\b{_SCOPE_END}\b|$)", re.IGNORECASE | re.DOTALL)
_SINGLE_TABLE = re.compile(r"\b(?:JOIN|UPDATE|INTO)\s+([A-Za-z_]\w*)", re.IGNORECASE)

# Dot commands whose arguments complete from a fixed list or from the schema / file system.
_DOT_CHOICES = {"mode": MODES, "headers": ("on", "off")}
_ON_OFF = ("timer", "explain", "echo", "bail", "changes", "expand", "pager")
_DOT_TABLES = ("schema", "indexes", "indices", "kv", "tables")
_DOT_FILES = ("read", "open", "output", "once", "dump", "backup", "save")


class SqlCompleter(Completer):
    """Completions for the REPL; ``names()`` gives table -> column names (cached by the caller)."""

    def __init__(self, names: Callable[[], dict[str, list[str]]], commands: Iterable[str] = ()) -> None:
        self.names = names
        self.commands = list(commands)
        self.paths = PathCompleter(expanduser=True)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.lstrip().startswith("."):
            yield from self._dot(document, complete_event)
            return
        tables = self.names()
        dotted = re.search(r"([A-Za-z_]\w*)\.(\w*)$", before)
        if dotted:
            owner = _resolve_alias(document.text, dotted.group(1), tables)
            yield from _matching(tables.get(owner, []), dotted.group(2), "column")
            return
        word = re.search(r"\w*$", before).group()
        context = clause_context(before[: len(before) - len(word)])
        if context == "table":
            yield from _matching(sorted(tables), word, "table")
        elif context == "column":
            in_scope = tables_in_scope(document.text, tables)
            columns = [c for t in (in_scope or sorted(tables)) for c in tables[t]]
            yield from _matching(list(dict.fromkeys(columns)), word, "column")
            yield from _matching(in_scope, word, "table")
        if word:
            for keyword in KEYWORDS:
                if keyword.lower().startswith(word.lower()):
                    text = keyword.lower() if word.islower() else keyword
                    yield Completion(text, start_position=-len(word), display_meta="keyword")

    def _dot(self, document: Document, event: CompleteEvent) -> Iterable[Completion]:
        before = document.text_before_cursor.lstrip()
        parts = before.split()
        if len(parts) <= 1 and not before.endswith(" "):
            yield from _matching(["." + c for c in self.commands], before, "command")
            return
        command = parts[0][1:].lower()
        arg_index = len(parts) - (1 if before.endswith(" ") else 2)
        word = "" if before.endswith(" ") else parts[-1]
        if command in _DOT_FILES or (command == "import" and arg_index == 0):
            sub = Document(word, len(word))
            yield from self.paths.get_completions(sub, event)
        elif command in _DOT_TABLES or command == "import":
            yield from _matching(sorted(self.names()), word, "table")
        elif command in _ON_OFF or command in _DOT_CHOICES:
            yield from _matching(list(_DOT_CHOICES.get(command, ("on", "off"))), word, "")


def _matching(candidates: Iterable[str], word: str, meta: str) -> Iterable[Completion]:
    low = word.lower()
    for candidate in candidates:
        if candidate.lower().startswith(low):
            yield Completion(candidate, start_position=-len(word), display_meta=meta)


def clause_context(text: str) -> str:
    """"table", "column" or "keyword": what the word starting at the end of ``text`` should be."""
    tokens = [t for t in _TOKEN.findall(text)]
    if not tokens:
        return "keyword"
    last = tokens[-1]
    upper = last.upper()
    if upper in _TABLE_CLAUSES:
        return "table"
    if upper in _COLUMN_CLAUSES:
        return "column"
    if last not in _OPERATORS:
        return "keyword"  # after a name or value: AS, FROM, WHERE... come next
    for token in reversed(tokens):  # after ',' '(' or an operator: the clause decides
        upper = token.upper()
        if upper in _CLAUSES:
            if upper in _TABLE_CLAUSES:
                return "table" if last == "," else "keyword"
            return "column" if upper in _COLUMN_CLAUSES else "keyword"
    return "column"


def tables_in_scope(text: str, tables: dict[str, list[str]]) -> list[str]:
    """The known tables the statement names after FROM (a list), JOIN, UPDATE or INTO."""
    by_lower = {name.lower(): name for name in tables}
    found: list[str] = []
    named = [m.group(1) for m in _SINGLE_TABLE.finditer(text)]
    for match in _FROM_LIST.finditer(text):
        named += [item.split()[0] for item in match.group(1).split(",") if item.split()]
    for name in named:
        real = by_lower.get(name.strip('"').lower())
        if real is not None and real not in found:
            found.append(real)
    return found


def _resolve_alias(text: str, name: str, tables: dict[str, list[str]]) -> str:
    """The table that ``name`` denotes in ``text``: itself, or the table it aliases."""
    by_lower = {t.lower(): t for t in tables}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    pattern = rf"\b([A-Za-z_]\w*)\s+(?:AS\s+)?{re.escape(name)}\b"
    for match in re.finditer(pattern, text, re.IGNORECASE):
        if match.group(1).lower() in by_lower:
            return by_lower[match.group(1).lower()]
    return name
