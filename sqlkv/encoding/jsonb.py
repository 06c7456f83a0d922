"""JSONB values: parsing, PostgreSQL's normal form and order, text output, and the stored form.

A JSONB value at run time is a `Jsonb` wrapping a plain tree: ``None`` (JSON null), ``bool``,
``int`` / ``Decimal`` (numbers, exact), ``str``, ``list`` and ``dict``. SQL NULL is the bare
Python ``None`` outside any wrapper, so ``'null'::JSONB`` (a value) and NULL (no value) differ.

Normal form, as PostgreSQL's jsonb: an object keeps the last of duplicate keys and stores its
keys shorter first, then by their UTF-8 bytes (``{"bb":1,"a":2}`` reads back ``{"a": 2, "bb": 1}``);
a number is an exact decimal (``1e2`` is 100, ``1.50`` keeps its scale and equals ``1.5``;
integers of any size stay exact). NaN and Infinity are not JSON and are refused.

Order (`Jsonb.__lt__`, PostgreSQL's btree order): Object > Array > Boolean > Number > String >
Null; objects by pair count, then key/value pairs in storage order; arrays by length, then element
by element; an empty top-level array sorts below everything (PostgreSQL's historical exception).

Stored form (row values, `sqlkv.encoding.values` ext type 10): the value's text (`to_text`) in
UTF-8, parsed again on read; text a correct writer cannot produce is a CorruptionError.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlkv.errors import CorruptionError, DataError

# kind ranks of PostgreSQL's order
_NULL, _STRING, _NUMBER, _BOOL, _ARRAY, _OBJECT = range(6)
_KIND_NAMES = {_NULL: "null", _STRING: "string", _NUMBER: "number", _BOOL: "boolean", _ARRAY: "array",
               _OBJECT: "object"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Token \"{name}\" is invalid")


def storage_key(key: str) -> tuple[int, bytes]:
    """Where a key goes among an object's keys: shorter first, then by UTF-8 bytes (PostgreSQL)."""
    raw = key.encode("utf-8", "surrogatepass")
    return len(raw), raw


def sorted_object(pairs: dict[str, Any]) -> dict[str, Any]:
    """``pairs`` with its keys in storage order."""
    return {k: pairs[k] for k in sorted(pairs, key=storage_key)}


# Integers this long stay Decimals: Python refuses to print ints past 4,300 digits.
_INT_DIGITS = 4000


def number(d: Decimal) -> int | Decimal:
    """A JSON number in normal form: an int when it has no fraction digits (unless huge)."""
    if not d.is_finite():
        raise DataError(f"invalid input syntax for type JSONB: {d} is not a JSON number")
    if d.as_tuple().exponent >= 0 and d.adjusted() < _INT_DIGITS:  # type: ignore[operator]
        return int(d)
    return d


def _parse_int(text: str) -> int | Decimal:
    return int(text) if len(text) < _INT_DIGITS else Decimal(text)


def parse(text: str) -> Jsonb:
    """JSON text -> Jsonb; DataError naming the position for invalid text."""
    try:
        tree = json.loads(text, parse_float=lambda s: number(Decimal(s)), parse_int=_parse_int,
                          parse_constant=_reject_constant, object_pairs_hook=lambda p: sorted_object(dict(p)))
    except json.JSONDecodeError as e:
        raise DataError(f"invalid input syntax for type JSONB: {e.msg} at line {e.lineno} column {e.colno} "
                        f"(character {e.pos + 1}) of {_shown(text)}") from None
    except (ValueError, InvalidOperation) as e:
        raise DataError(f"invalid input syntax for type JSONB: {e} in {_shown(text)}") from None
    except RecursionError:
        raise DataError("invalid input syntax for type JSONB: nested too deeply") from None
    _check_strings(tree)
    return Jsonb(tree)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


# Containers nested deeper are refused: every operation on a document recurses through it.
MAX_DEPTH = 500


def _check_strings(tree: Any, depth: int = 0) -> None:
    """Lone surrogates (``"\\ud800"``) are valid JSON escapes but no Unicode text: refuse them;
    and refuse documents nested deeper than MAX_DEPTH."""
    if isinstance(tree, str):
        try:
            tree.encode("utf-8")
        except UnicodeEncodeError:
            raise DataError("invalid input syntax for type JSONB: a \\u escape is a lone surrogate") from None
        return
    if depth > MAX_DEPTH and isinstance(tree, (list, dict)):
        raise DataError(f"JSONB value nested more than {MAX_DEPTH} levels deep")
    if isinstance(tree, list):
        for v in tree:
            _check_strings(v, depth + 1)
    elif isinstance(tree, dict):
        for k, v in tree.items():
            _check_strings(k)
            _check_strings(v, depth + 1)


def from_python(value: Any, where: str = "value") -> Jsonb:
    """A Python dict/list/str/number/bool/None (a driver parameter) as a Jsonb value."""
    try:
        tree = tree_of(value, where)
    except RecursionError:
        raise DataError(f"{where}: JSONB value nested more than {MAX_DEPTH} levels deep") from None
    _check_strings(tree)
    return Jsonb(tree)


def tree_of(value: Any, where: str) -> Any:
    """A plain Python value as a normal-form tree (floats as the decimal of their repr)."""
    if value is None or isinstance(value, (bool, str)):
        if isinstance(value, str):
            _check_strings(value)
        return value
    if isinstance(value, Jsonb):
        return value.tree
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise DataError(f"{where}: {value} is not a JSON number")
        return number(Decimal(repr(value)))
    if isinstance(value, Decimal):
        return number(value)
    if isinstance(value, (list, tuple)):
        return [tree_of(v, where) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise DataError(f"{where}: JSON object keys must be strings, not {type(k).__name__} {k!r}")
            out[k] = tree_of(v, where)
        return sorted_object(out)
    raise DataError(f"{where}: a {type(value).__name__} is not a JSON value")


# ---------------------------------------------------------------- text


def _number_text(n: int | Decimal) -> str:
    return str(n) if isinstance(n, int) else format(n, "f")


def to_text(tree: Any) -> str:
    """PostgreSQL's jsonb output: ``{"a": 1, "b": [true, null]}``."""
    parts: list[str] = []
    _write(tree, parts)
    return "".join(parts)


def _write(tree: Any, out: list[str]) -> None:
    if tree is None:
        out.append("null")
    elif tree is True:
        out.append("true")
    elif tree is False:
        out.append("false")
    elif isinstance(tree, str):
        out.append(json.dumps(tree, ensure_ascii=False))
    elif isinstance(tree, (int, Decimal)):
        out.append(_number_text(tree))
    elif isinstance(tree, list):
        out.append("[")
        for i, v in enumerate(tree):
            if i:
                out.append(", ")
            _write(v, out)
        out.append("]")
    else:
        out.append("{")
        for i, (k, v) in enumerate(tree.items()):
            if i:
                out.append(", ")
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(": ")
            _write(v, out)
        out.append("}")


def pretty(tree: Any, indent: int = 0) -> str:
    """jsonb_pretty: four spaces per level, one element per line, empty containers inline."""
    pad = "    " * (indent + 1)
    if isinstance(tree, list) and tree:
        items = [pad + pretty(v, indent + 1) for v in tree]
        return "[\n" + ",\n".join(items) + "\n" + "    " * indent + "]"
    if isinstance(tree, dict) and tree:
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {pretty(v, indent + 1)}" for k, v in tree.items()]
        return "{\n" + ",\n".join(items) + "\n" + "    " * indent + "}"
    return to_text(tree)


def to_python(tree: Any) -> Any:
    """The tree as a driver returns it: numbers with a fraction as float when the float is
    exactly the same decimal, else as Decimal (exactness first); ints stay ints."""
    if isinstance(tree, Decimal):
        f = float(tree)
        return f if Decimal(repr(f)) == tree else tree
    if isinstance(tree, list):
        return [to_python(v) for v in tree]
    if isinstance(tree, dict):
        return {k: to_python(v) for k, v in tree.items()}
    return tree


# ---------------------------------------------------------------- order and equality


def kind_rank(tree: Any) -> int:
    if tree is None:
        return _NULL
    if isinstance(tree, bool):
        return _BOOL
    if isinstance(tree, str):
        return _STRING
    if isinstance(tree, (int, Decimal)):
        return _NUMBER
    if isinstance(tree, list):
        return _ARRAY
    return _OBJECT


def type_name(tree: Any) -> str:
    """jsonb_typeof's answer: object, array, string, number, boolean or null."""
    return _KIND_NAMES[kind_rank(tree)]


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1: PostgreSQL's order of two trees (below the top level)."""
    ra, rb = kind_rank(a), kind_rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == _ARRAY:
        if len(a) != len(b):
            return -1 if len(a) < len(b) else 1
        for x, y in zip(a, b):
            c = compare(x, y)
            if c:
                return c
        return 0
    if ra == _OBJECT:
        if len(a) != len(b):
            return -1 if len(a) < len(b) else 1
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            if ka != kb:
                return -1 if ka < kb else 1
            c = compare(va, vb)
            if c:
                return c
        return 0
    if ra == _NULL or a == b:
        return 0
    return -1 if a < b else 1


def _hash_form(tree: Any) -> Any:
    """A hashable form equal exactly when the trees are equal (True is not 1, 1.0 is 1)."""
    if isinstance(tree, list):
        return (_ARRAY, tuple(_hash_form(v) for v in tree))
    if isinstance(tree, dict):
        return (_OBJECT, tuple((k, _hash_form(v)) for k, v in tree.items()))
    return (kind_rank(tree), tree)


class Jsonb:
    """One JSONB value (see the module docstring); immutable: operators build new values."""

    __slots__ = ("tree", "_hash")

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self._hash: int | None = None

    def _cmp(self, other: Jsonb) -> int:
        a, b = self.tree, other.tree
        a_empty, b_empty = a == [] and isinstance(a, list), b == [] and isinstance(b, list)
        if a_empty or b_empty:  # an empty top-level array sorts below everything
            return 0 if a_empty and b_empty else (-1 if a_empty else 1)
        return compare(a, b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Jsonb) and self._cmp(other) == 0

    def __lt__(self, other: Jsonb) -> bool:
        return self._cmp(other) < 0

    def __le__(self, other: Jsonb) -> bool:
        return self._cmp(other) <= 0

    def __gt__(self, other: Jsonb) -> bool:
        return self._cmp(other) > 0

    def __ge__(self, other: Jsonb) -> bool:
        return self._cmp(other) >= 0

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(_hash_form(self.tree))
        return self._hash

    def __str__(self) -> str:
        return to_text(self.tree)

    def __repr__(self) -> str:
        return f"Jsonb({to_text(self.tree)!r})"


# ---------------------------------------------------------------- stored form


def encode_stored(value: Jsonb) -> bytes:
    _check_strings(value.tree)  # a value built by operators (jsonb_build_array(doc)...) may nest deeper
    return to_text(value.tree).encode("utf-8")


def decode_stored(data: bytes) -> Jsonb:
    """The stored text is already in normal form (the writer wrote `to_text`): read it without
    re-sorting keys or re-checking strings -- the cost of reading a JSONB column is json.loads."""
    try:
        tree = json.loads(data.decode("utf-8"), parse_float=_stored_number, parse_int=_parse_int,
                          parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, InvalidOperation, RecursionError, DataError) as e:
        raise CorruptionError(f"corrupt row value: bad JSONB payload ({type(e).__name__}: {e})") from None
    return Jsonb(tree)


def _stored_number(text: str) -> int | Decimal:
    return number(Decimal(text))
