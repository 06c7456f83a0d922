"""JSONB operators and functions on values (issue 15): PostgreSQL's semantics, no SQL compiling.

Each function takes `Jsonb` values (and Python keys, indexes, paths) and returns a new value --
a value is never changed in place. SQL NULL is ``None``; JSON null inside a document is the
tree's ``None`` (``Jsonb(None)`` at the top). Errors are PostgreSQL's, as DataError.

``doc -> 'a'`` is `field`, ``doc #> '{a,0}'`` is `at_path`, ``doc @> '{"a":1}'`` is `contains`,
``doc || other`` is `concat`, ``doc - 'a'`` / ``doc - 0`` is `delete`, ``doc #- '{a,0}'`` is
`delete_path`, jsonb_set / jsonb_insert are `set_path` / `insert_path`.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb, compare, from_python, parse, sorted_object, to_text, tree_of
from sqlkv.errors import DataError

_MISSING = object()


def as_doc(value: object, what: str) -> Jsonb:
    """An operand that must be JSONB: a Jsonb, or text (an untyped parameter) parsed."""
    if type(value) is Jsonb:
        return value
    if isinstance(value, str):
        return parse(value)
    if isinstance(value, SqlArray):  # a Python list parameter (bound as an ARRAY) as a JSON array
        return from_python(list(value.items), what)
    raise DataError(f"{what} needs a JSONB value, not {type(value).__name__} {value!r}")


def text_of(tree: Any) -> str | None:
    """``->>`` / ``#>>``: a string as itself, JSON null as SQL NULL, anything else as its text."""
    if tree is None:
        return None
    if isinstance(tree, str):
        return tree
    return to_text(tree)


# ---------------------------------------------------------------- access


def _index(items: list, i: int) -> int | None:
    """A subscript into ``items`` (negative counts from the end); None when out of range."""
    if i < 0:
        i += len(items)
    return i if 0 <= i < len(items) else None


def field(doc: Jsonb, key: object) -> Jsonb | None:
    """``->``: an object's key or an array's element (int; negative from the end), else NULL."""
    found = _child(doc.tree, key)
    return None if found is _MISSING else Jsonb(found)


def _child(tree: Any, key: object) -> Any:
    if isinstance(tree, dict) and isinstance(key, str):
        return tree.get(key, _MISSING)
    if isinstance(tree, list) and isinstance(key, int) and not isinstance(key, bool):
        i = _index(tree, key)
        return _MISSING if i is None else tree[i]
    return _MISSING


def _path_step(tree: Any, step: str) -> Any:
    """One element of a text path: a key of an object, an integer subscript of an array."""
    if isinstance(tree, dict):
        return tree.get(step, _MISSING)
    if isinstance(tree, list):
        try:
            i = _index(tree, int(step))
        except ValueError:
            return _MISSING
        return _MISSING if i is None else tree[i]
    return _MISSING


def at_path(doc: Jsonb, path: list[str]) -> Jsonb | None:
    """``#>``: the value at a text path, NULL when any step is missing."""
    tree = doc.tree
    for step in path:
        if step is None:
            return None
        tree = _path_step(tree, step)
        if tree is _MISSING:
            return None
    return Jsonb(tree)


# ---------------------------------------------------------------- containment and existence


def contains(a: Jsonb, b: Jsonb) -> bool:
    """``a @> b``: PostgreSQL's containment (a top-level array also contains a bare scalar)."""
    if isinstance(a.tree, list) and not isinstance(b.tree, (list, dict)):
        return any(_contains(x, b.tree) for x in a.tree)
    return _contains(a.tree, b.tree)


def _contains(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        if not isinstance(b, dict):
            return False
        return all(k in a and _contains(a[k], v) for k, v in b.items())
    if isinstance(a, list):
        if not isinstance(b, list):
            return False
        # each element of b is contained in some element of a (order and repeats do not matter);
        # a scalar element must match a scalar, a container a container
        return all(any(_contains(x, y) for x in a) for y in b)
    if isinstance(b, (dict, list)):
        return False
    return compare(a, b) == 0


def has_key(doc: Jsonb, key: str) -> bool:
    """``?``: a top-level key, or a string element of a top-level array (or the string itself)."""
    tree = doc.tree
    if isinstance(tree, dict):
        return key in tree
    if isinstance(tree, list):
        return any(isinstance(x, str) and x == key for x in tree)
    return isinstance(tree, str) and tree == key


def has_any(doc: Jsonb, keys: list) -> bool:
    return any(k is not None and has_key(doc, k) for k in keys)


def has_all(doc: Jsonb, keys: list) -> bool:
    return all(k is None or has_key(doc, k) for k in keys)  # PostgreSQL skips NULL elements


# ---------------------------------------------------------------- building new values


def concat(a: Jsonb, b: Jsonb) -> Jsonb:
    """``||``: two objects merge (the right's keys win); otherwise arrays concatenate, a
    non-array operand counting as a one-element array."""
    x, y = a.tree, b.tree
    if isinstance(x, dict) and isinstance(y, dict):
        return Jsonb(sorted_object({**x, **y}))
    left = x if isinstance(x, list) else [x]
    right = y if isinstance(y, list) else [y]
    return Jsonb(left + right)


def delete(doc: Jsonb, key: object) -> Jsonb:
    """``-``: an object's key, an array's string elements equal to a text key, or an array's
    element at an integer index (negative from the end; out of range changes nothing)."""
    tree = doc.tree
    if isinstance(key, int) and not isinstance(key, bool):
        if isinstance(tree, dict):
            raise DataError("cannot delete from object using integer index")
        if not isinstance(tree, list):
            raise DataError("cannot delete from scalar")
        i = _index(tree, key)
        return doc if i is None else Jsonb(tree[:i] + tree[i + 1:])
    if not isinstance(key, str):
        raise DataError(f"jsonb - needs a TEXT key or an INT index, not {type(key).__name__}")
    if isinstance(tree, dict):
        return Jsonb({k: v for k, v in tree.items() if k != key})
    if isinstance(tree, list):
        return Jsonb([v for v in tree if not (isinstance(v, str) and v == key)])
    raise DataError("cannot delete from scalar")


def delete_keys(doc: Jsonb, keys: list) -> Jsonb:
    for k in keys:
        if k is not None:
            doc = delete(doc, k)
    return doc


def _step_index(step: str, position: int) -> int:
    try:
        return int(step)
    except ValueError:
        raise DataError(f'path element at position {position} is not an integer: "{step}"') from None


def delete_path(doc: Jsonb, path: list[str]) -> Jsonb:
    """``#-``: the document without the element at ``path`` (unchanged when there is none)."""
    if not isinstance(doc.tree, (dict, list)):
        raise DataError("cannot delete path in scalar")
    if not path:
        return doc
    return Jsonb(_delete_at(doc.tree, path, 1))


def _delete_at(tree: Any, path: list[str], position: int) -> Any:
    step, rest = path[0], path[1:]
    if isinstance(tree, dict):
        if step not in tree:
            return tree
        if not rest:
            return {k: v for k, v in tree.items() if k != step}
        return {**tree, step: _delete_at(tree[step], rest, position + 1)}
    if isinstance(tree, list):
        i = _index(tree, _step_index(step, position))
        if i is None:
            return tree
        if not rest:
            return tree[:i] + tree[i + 1:]
        return tree[:i] + [_delete_at(tree[i], rest, position + 1)] + tree[i + 1:]
    return tree


def _settable(doc: Jsonb, path: list[str]) -> bool:
    """Checks shared by jsonb_set and jsonb_insert; False for an empty path (nothing to do)."""
    if not isinstance(doc.tree, (dict, list)):
        raise DataError("cannot set path in scalar")
    if any(p is None for p in path):
        raise DataError("path element must not be NULL")
    return bool(path)


def set_path(doc: Jsonb, path: list[str], new: Jsonb, create_missing: bool = True) -> Jsonb:
    """jsonb_set: replace the value at ``path``; with ``create_missing`` add a missing last key
    (or an array element past either end); a missing step before the last changes nothing."""
    if not _settable(doc, path):
        return doc
    return Jsonb(_set_at(doc.tree, path, new.tree, create_missing, 1, insert=None))


def insert_path(doc: Jsonb, path: list[str], new: Jsonb, after: bool = False) -> Jsonb:
    """jsonb_insert: into an array before (or ``after``) the element at the path's last
    subscript; into an object under a new key (an existing key is an error)."""
    if not _settable(doc, path):
        return doc
    return Jsonb(_set_at(doc.tree, path, new.tree, True, 1, insert="after" if after else "before"))


def _set_at(tree: Any, path: list[str], new: Any, create: bool, position: int, insert: str | None) -> Any:
    step, rest = path[0], path[1:]
    if isinstance(tree, dict):
        if step in tree:
            if rest:
                return sorted_object({**tree, step: _set_at(tree[step], rest, new, create, position + 1, insert)})
            if insert is not None:
                raise DataError("cannot replace existing key")
            return sorted_object({**tree, step: new})
        if rest or not create:
            return tree
        return sorted_object({**tree, step: new})
    if isinstance(tree, list):
        raw = _step_index(step, position)
        i = raw + len(tree) if raw < 0 else raw
        if 0 <= i < len(tree):
            if rest:
                return tree[:i] + [_set_at(tree[i], rest, new, create, position + 1, insert)] + tree[i + 1:]
            if insert == "before":
                return tree[:i] + [new] + tree[i:]
            if insert == "after":
                return tree[:i + 1] + [new] + tree[i + 1:]
            return tree[:i] + [new] + tree[i + 1:]
        if rest or not create:
            return tree
        return [new] + tree if i < 0 else tree + [new]
    return tree  # a scalar on the way: nothing to set


def strip_nulls(tree: Any) -> Any:
    """jsonb_strip_nulls: object fields whose value is null, at every depth (array nulls stay)."""
    if isinstance(tree, dict):
        return {k: strip_nulls(v) for k, v in tree.items() if v is not None}
    if isinstance(tree, list):
        return [strip_nulls(v) for v in tree]
    return tree


def array_length(doc: Jsonb) -> int:
    if isinstance(doc.tree, list):
        return len(doc.tree)
    if isinstance(doc.tree, dict):
        raise DataError("cannot get array length of a non-array")
    raise DataError("cannot get array length of a scalar")


def object_pairs(doc: Jsonb, fname: str) -> list[tuple[str, Any]]:
    if not isinstance(doc.tree, dict):
        raise DataError(f"cannot call {fname} on a{'n array' if isinstance(doc.tree, list) else ' scalar'}")
    return list(doc.tree.items())


def array_items(doc: Jsonb, fname: str) -> list[Any]:
    if not isinstance(doc.tree, list):
        raise DataError(f"cannot extract elements from a{'n object' if isinstance(doc.tree, dict) else ' scalar'}"
                        f" ({fname})")
    return list(doc.tree)


# ---------------------------------------------------------------- from SQL values


def sql_value_tree(value: object) -> Any:
    """to_jsonb of a SQL value: numbers, text and booleans as themselves, date/time values as
    their ISO text (PostgreSQL's ``"2024-01-02T03:04:05"``), other values as their text."""
    if value is None or isinstance(value, (bool, str, int, Decimal, Jsonb, float)):
        return tree_of(value, "to_jsonb()")
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if isinstance(value, SqlArray):  # PostgreSQL: to_jsonb(ARRAY[1, 2]) is [1, 2]
        return [sql_value_tree(v) for v in value]
    return str(value)


def text_array(value: object, what: str) -> list:
    """A text[] operand (a path, keys): ``'{a,b,"c d"}'`` text, or a JSONB array of strings (a
    driver's list)."""
    if type(value) is Jsonb and isinstance(value.tree, list):
        items = value.tree
    elif isinstance(value, (list, tuple, SqlArray)):  # SqlArray: ARRAY['a', 'b'] (PostgreSQL's usual form)
        items = list(value)
    elif isinstance(value, str):
        return parse_text_array(value, what)
    else:
        raise DataError(f"{what} needs a text array such as '{{a,b}}', not {type(value).__name__}")
    return [None if v is None else (v if isinstance(v, str) else to_text(tree_of(v, what))) for v in items]


def parse_text_array(text: str, what: str) -> list:
    """PostgreSQL's array text for text[]: ``{a,"b c",NULL}`` (quotes and backslashes)."""
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise DataError(f'malformed array literal for {what}: "{text}" (expected {{a,b,...}})')
    body = s[1:-1]
    if not body.strip():
        return []
    out: list = []
    i, n = 0, len(body)
    while True:
        while i < n and body[i] == " ":
            i += 1
        if i < n and body[i] == '"':
            i += 1
            chars = []
            while i < n and body[i] != '"':
                if body[i] == "\\" and i + 1 < n:
                    i += 1
                chars.append(body[i])
                i += 1
            if i >= n:
                raise DataError(f'malformed array literal for {what}: "{text}" (unterminated quote)')
            i += 1
            out.append("".join(chars))
        else:
            start = i
            while i < n and body[i] != ",":
                if body[i] in '{}"':
                    raise DataError(f'malformed array literal for {what}: "{text}"')
                i += 1
            item = body[start:i].strip()
            out.append(None if item.upper() == "NULL" else item)
        while i < n and body[i] == " ":
            i += 1
        if i >= n:
            return out
        if body[i] != ",":
            raise DataError(f'malformed array literal for {what}: "{text}"')
        i += 1
