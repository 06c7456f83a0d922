"""SQL/JSON path text -> a tree (`parse_jsonpath`), for jsonb_path_query and friends (issue 15).

The subset of PostgreSQL's jsonpath language sqlkv reads (evaluation: jsonpath_eval.py):

    [lax | strict] expression
    $  @  $name  $"name"  last                      (the root, the filter's item, a variable, last)
    .key  ."key"  .*  .**  .**{2}  .**{1 to last}   (member, wildcard, recursive wildcard)
    [0]  [1, 3 to 5]  [last - 1]  [*]               (subscripts, zero-based; expressions allowed)
    ? (predicate)                                   (filter)
    .type() .size() .double() .abs() .floor() .ceiling() .keyvalue()
    123  1.5e3  "text"  true  false  null
    + - * / %  (unary + -)
    == != <> < <= > >=  && || !(...)  exists(path)  (predicate) is unknown
    like_regex "pattern" [flag "imsq"]  starts with "text" | $var

Any other method (``.datetime()``, ``.string()`` ...) or construct is a NotSupportedError naming
it; malformed text is a DataError ``syntax error in jsonpath at or near "..."``, as PostgreSQL's.
A predicate is accepted at the top level (``$.a > 1``: jsonb_path_match's form) and inside
filters; ``@`` only inside filters, ``last`` only inside subscripts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

from sqlkv.encoding.jsonb import number
from sqlkv.errors import DataError, NotSupportedError, ProgrammingError
from sqlkv.sql.expr.env import Compiled, constant
from sqlkv.sql.types import TEXT

METHODS = frozenset({"type", "size", "double", "abs", "floor", "ceiling", "keyvalue"})
_KNOWN_UNSUPPORTED = frozenset({"datetime", "bigint", "boolean", "date", "decimal", "integer", "number", "string",
                                "time", "time_tz", "timestamp", "timestamp_tz", "ltrim", "rtrim", "btrim", "lower",
                                "upper", "initcap", "replace", "split_part"})
COMPARISONS = frozenset({"==", "!=", "<>", "<", "<=", ">", ">="})
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<var>\$(?:[^\W\d]\w*|"(?:[^"\\]|\\.)*")?)
  | (?P<word>[^\W\d]\w*)
  | (?P<op>\*\*|==|!=|<>|<=|>=|&&|\|\||[.@*\[\](),?<>!+\-/%{}])
""", re.VERBOSE)
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


@dataclass
class Node:
    """One node of a path: ``kind`` says what it is, ``args`` its operands."""

    kind: str  # root current var last literal key wildcard any index filter method unary binary
    #            compare and or not exists like starts unknown
    value: Any = None
    args: list[Any] = field(default_factory=list)
    steps: list[Node] = field(default_factory=list)  # accessors applied to this primary, in order


@dataclass
class JsonPath:
    strict: bool
    expr: Node
    text: str


_PREDICATES = frozenset({"compare", "and", "or", "not", "exists", "like", "starts", "unknown"})


def is_predicate(node: Node) -> bool:
    return node.kind in _PREDICATES and not node.steps


def _error(near: str) -> DataError:
    return DataError(f'syntax error in jsonpath at or near "{near}"' if near else
                     "syntax error in jsonpath at end of input")


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _error(text[pos])
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))  # type: ignore[arg-type]
    return out


def unquote(token: str) -> str:
    """A double-quoted jsonpath string's text, escapes resolved."""
    body = token[1:-1]
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", body[i + 2:i + 6]):
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        elif nxt == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 2:i + 4]):
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        else:
            raise DataError(f'syntax error in jsonpath: invalid escape "\\{nxt}" in {token}')
    text = "".join(out)
    try:  # \ud83d\ude00: a surrogate pair is one character; a lone surrogate is no text
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise DataError(f"syntax error in jsonpath: invalid Unicode escape in {token}") from None


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.in_filter = 0
        self.in_subscript = 0

    # -- token helpers
    def peek(self, k: int = 0) -> tuple[str, str]:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "end":
            raise _error("")
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        kind, tok = self.peek()
        if kind != "string" and tok == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise _error(self.peek()[1])

    def word(self, *words: str) -> str | None:
        kind, tok = self.peek()
        if kind == "word" and tok in words:
            self.i += 1
            return tok
        return None

    # -- grammar, loosest first
    def path(self) -> tuple[bool, Node]:
        strict = self.word("strict", "lax") == "strict"
        node = self.disjunction()
        if self.peek()[0] != "end":
            raise _error(self.peek()[1])
        return strict, node

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.accept("||"):
            node = Node("or", args=[self._bool(node), self._bool(self.conjunction())])
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.accept("&&"):
            node = Node("and", args=[self._bool(node), self._bool(self.negation())])
        return node

    def negation(self) -> Node:
        if self.accept("!"):
            self.expect("(")
            inner = self._bool(self.disjunction())
            self.expect(")")
            return Node("not", args=[inner])
        return self.predicate()

    def predicate(self) -> Node:
        if self.word("exists"):
            self.expect("(")
            inner = self._value(self.disjunction())
            self.expect(")")
            return Node("exists", args=[inner])
        left = self.additive()
        kind, tok = self.peek()
        if kind == "op" and tok in COMPARISONS:
            self.i += 1
            return Node("compare", "!=" if tok == "<>" else tok, [self._value(left), self._value(self.additive())])
        if self.word("like_regex"):
            pattern = self._string()
            flags = self._string() if self.word("flag") else ""
            return Node("like", (pattern, flags), [self._value(left)])
        if self.word("starts"):
            if not self.word("with"):
                raise _error(self.peek()[1])
            kind, tok = self.peek()
            if kind == "var":
                prefix = self.primary()
            else:
                prefix = Node("literal", self._string())
            return Node("starts", args=[self._value(left), prefix])
        if self.word("is"):
            if not self.word("unknown"):
                raise _error(self.peek()[1])
            return Node("unknown", args=[self._bool(left)])
        return left

    def additive(self) -> Node:
        node = self.multiplicative()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            node = Node("binary", op, [self._value(node), self._value(self.multiplicative())])
        return node

    def multiplicative(self) -> Node:
        node = self.unary()
        while self.peek() in (("op", "*"), ("op", "/"), ("op", "%")):
            op = self.take()[1]
            node = Node("binary", op, [self._value(node), self._value(self.unary())])
        return node

    def unary(self) -> Node:
        if self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            return Node("unary", op, [self._value(self.unary())])
        return self.accessors(self.primary())

    def primary(self) -> Node:
        kind, tok = self.take()
        if kind == "number":
            return Node("literal", number(Decimal(tok)))
        if kind == "string":
            return Node("literal", unquote(tok))
        if kind == "var":
            if tok == "$":
                return Node("root")
            return Node("var", unquote(tok[1:]) if tok[1:].startswith('"') else tok[1:])
        if kind == "word":
            if tok in ("true", "false"):
                return Node("literal", tok == "true")
            if tok == "null":
                return Node("literal", None)
            if tok == "last":
                if not self.in_subscript:
                    raise DataError("LAST is allowed only in array subscripts")
                return Node("last")
        if tok == "@":
            if not self.in_filter:
                raise DataError("@ is not allowed in root expressions")
            return Node("current")
        if tok == "(":
            inner = self.disjunction()
            self.expect(")")
            return inner
        raise _error(tok)

    def accessors(self, node: Node) -> Node:
        while True:
            if self.accept("."):
                node.steps.append(self._member())
            elif self.peek() == ("op", "["):
                self.i += 1
                node.steps.append(self._subscripts())
            elif self.accept("?"):
                self.expect("(")
                self.in_filter += 1
                inner = self._bool(self.disjunction())
                self.in_filter -= 1
                self.expect(")")
                node.steps.append(Node("filter", args=[inner]))
            else:
                return node

    def _member(self) -> Node:
        kind, tok = self.take()
        if kind == "string":
            return Node("key", unquote(tok))
        if tok == "*" and kind == "op":
            return Node("wildcard")
        if tok == "**" and kind == "op":
            return self._any_levels()
        if kind == "word":
            if self.peek() == ("op", "("):
                self.i += 1
                self.expect(")")
                if tok in METHODS:
                    return Node("method", tok)
                if tok in _KNOWN_UNSUPPORTED:
                    raise NotSupportedError(f"jsonpath item method .{tok}() is not supported")
                raise DataError(f'syntax error in jsonpath: unknown item method ".{tok}()"')
            return Node("key", tok)
        raise _error(tok)

    def _any_levels(self) -> Node:
        low, high = 0, None  # None: no upper bound (last)
        if self.accept("{"):
            low = self._level()
            high = self._level() if self.word("to") else low
            self.expect("}")
        return Node("any", (low, high))

    def _level(self) -> int | None:
        if self.word("last"):
            return None
        kind, tok = self.take()
        if kind != "number" or not tok.isdigit():
            raise _error(tok)
        return int(tok)

    def _subscripts(self) -> Node:
        if self.accept("*"):
            self.expect("]")
            return Node("wildcard_array")
        ranges = []
        self.in_subscript += 1
        while True:
            start = self._value(self.additive())
            end = self._value(self.additive()) if self.word("to") else None
            ranges.append((start, end))
            if not self.accept(","):
                break
        self.in_subscript -= 1
        self.expect("]")
        return Node("index", args=ranges)

    def _string(self) -> str:
        kind, tok = self.take()
        if kind != "string":
            raise _error(tok)
        return unquote(tok)

    # -- context checks
    def _bool(self, node: Node) -> Node:
        if not is_predicate(node):
            raise DataError("syntax error in jsonpath: a predicate is expected here (==, <, &&, exists(...) ...)")
        return node

    def _value(self, node: Node) -> Node:
        if is_predicate(node):
            raise DataError("syntax error in jsonpath: a predicate cannot be an operand here")
        return node


@lru_cache(maxsize=256)
def parse_jsonpath(text: str) -> JsonPath:
    """The parsed path (cached per text: callers must not change it)."""
    try:
        strict, expr = _Parser(text).path()
    except RecursionError:
        raise DataError(f"jsonpath is nested too deeply: {text[:60]}") from None
    return JsonPath(strict, expr, text)


def jsonpath_cast(part: Compiled) -> Compiled:
    """``'$.a'::jsonpath``: sqlkv has no jsonpath type, so the cast checks the text (a constant
    now, anything else when evaluated) and leaves TEXT, which every jsonpath function takes."""
    if part.type.kind not in ("TEXT", "NULL"):
        raise ProgrammingError(f"cannot cast type {part.type.sql()} to jsonpath")
    if part.const:
        if part.value is not None:
            parse_jsonpath(part.value)
        return constant(part.value, TEXT)
    fn = part.fn
    return Compiled(lambda r: None if (v := fn(r)) is None else parse_jsonpath(v).text, TEXT)
