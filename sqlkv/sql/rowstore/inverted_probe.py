"""Which inverted-index entries a predicate needs: `probe_groups` (see exec/inverted_scan.py).

A `Probe` names the operator; given the operand's value at execution time, `probe_groups`
returns the key prefixes to scan as groups in conjunctive normal form (a row qualifies when
each group has an entry of it under one of the group's prefixes), or None when the value
constrains no entry and every row is a candidate. Every answer is a superset of the rows the
predicate accepts: the predicate itself is checked again on each row fetched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlkv.encoding.arrays import SqlArray
from sqlkv.encoding.jsonb import Jsonb, parse
from sqlkv.errors import Error
from sqlkv.sql.expr.jsonb_ops import text_array
from sqlkv.sql.rowstore.inverted import EMPTY_ARRAY, InvertedCodec, element_key, minimal_documents
from sqlkv.sql.rowstore.keyspans import _Empty, _Inexact, coerce_key_value

# contains: col @> value; contained_by: col <@ value (ARRAY and JSONB); overlaps: col && value; element: value = ANY(col);
# has_key: col ? value; has_any: col ?| value; has_all: col ?& value
OPS = ("contains", "contained_by", "overlaps", "element", "has_key", "has_any", "has_all")

Groups = list[list[bytes]]


@dataclass(frozen=True)
class Probe:
    op: str


class _Unusable(Exception):
    """The value cannot be turned into entries: read every row instead."""


def probe_groups(probe: Probe, inv: InvertedCodec, value: Any) -> Groups | None:
    if value is None:
        return []  # NULL operand: the predicate is never TRUE
    try:
        if inv.kind == "ARRAY":
            return _array_groups(probe.op, inv, value)
        return _jsonb_groups(probe.op, inv, value)
    except _Unusable:
        return None


# ---------------------------------------------------------------- ARRAY columns


def _element(inv: InvertedCodec, v: Any) -> bytes | None:
    """The entry prefix of one element, None when no stored element can equal it (NULL, 1.5 in
    an INT[] column); _Unusable when it must be compared some other way."""
    try:
        return element_key(inv.prefix, coerce_key_value(v, inv.element_type, "eq"))  # type: ignore[arg-type]
    except _Empty:
        return None
    except _Inexact:
        raise _Unusable from None


def _array_groups(op: str, inv: InvertedCodec, value: Any) -> Groups | None:
    if op == "element":
        key = _element(inv, value)
        return [[key]] if key is not None else []
    if not isinstance(value, SqlArray):
        raise _Unusable
    keys = [_element(inv, v) for v in value]
    if op == "overlaps":
        return [sorted({k for k in keys if k is not None})]
    if op == "contained_by":  # every element among the value's, or no element at all
        return [sorted({k for k in keys if k is not None} | {element_key(inv.prefix, EMPTY_ARRAY)})]
    if op == "contains":
        if any(k is None for k in keys):
            return []  # a NULL element is never contained
        if not keys:
            return None  # every array contains the empty array
        return [[k] for k in sorted(set(keys))]
    raise _Unusable


# ---------------------------------------------------------------- JSONB columns


def _doc(value: Any) -> Jsonb:
    if isinstance(value, Jsonb):
        return value
    if isinstance(value, str):
        try:
            return parse(value)
        except Error:
            raise _Unusable from None  # the re-check reports the bad text
    raise _Unusable


def _key_prefixes(inv: InvertedCodec, key: Any) -> list[bytes]:
    """Entries of a document having top-level key ``key``: ``{"key": ...}`` (the encoding of
    ``{"key": null}`` without its last byte, the null), the string inside a top-level array, or
    the document that is that string (PostgreSQL's ``?`` accepts all three)."""
    if not isinstance(key, str):
        raise _Unusable
    obj = element_key(inv.prefix, Jsonb({key: None}))[:-1]
    return [obj, element_key(inv.prefix, Jsonb([key])), element_key(inv.prefix, Jsonb(key))]


def _text_items(value: Any) -> list[Any]:
    """The keys of a ``?|`` / ``?&`` operand, read as the operators read it (NULLs skipped)."""
    try:
        return [v for v in text_array(value, "?|") if v is not None]
    except Error:
        raise _Unusable from None  # the re-check reports it


def _jsonb_groups(op: str, inv: InvertedCodec, value: Any) -> Groups | None:
    if op == "has_key":
        return [_key_prefixes(inv, value)]
    if op == "has_any":
        return [sorted({p for k in _text_items(value) for p in _key_prefixes(inv, k)})]
    if op == "has_all":
        keys = _text_items(value)
        return [_key_prefixes(inv, k) for k in sorted(set(keys))] or None
    if op == "contained_by":
        return [sorted({element_key(inv.prefix, Jsonb(doc)) for doc in _contained_entries(_doc(value).tree)})]
    if op != "contains":
        raise _Unusable
    tree = _doc(value).tree
    if not isinstance(tree, (dict, list)):
        # a scalar is contained in itself and in a top-level array holding it
        return [[element_key(inv.prefix, Jsonb(tree)), element_key(inv.prefix, Jsonb([tree]))]]
    starts = set()
    for doc in minimal_documents(tree):
        key = element_key(inv.prefix, Jsonb(doc))
        if _empty_leaf(doc):
            if doc == []:
                continue  # the query is a top-level []: any array, whose entries share no prefix
            # {"a": []} asks for any array at "a": every entry of one starts with the encoding
            # of {"a": []} without its 4-byte element count (as does that of {"a": {}} for objects)
            key = key[:-_COUNT_BYTES]
        starts.add(key)
    return [[k] for k in sorted(starts)] or None


_COUNT_BYTES = 4  # a container's element count in the JSONB key encoding (jsonb_keys.py)


def _empty_leaf(doc: Any) -> bool:
    """Whether a minimal document ends in an empty array or object."""
    while isinstance(doc, (dict, list)):
        if not doc:
            return True
        doc = next(iter(doc.values())) if isinstance(doc, dict) else doc[0]
    return False


def _contained_entries(tree: Any) -> list[Any]:
    """Every entry a document contained in ``tree`` can have (``doc <@ tree``): the minimal
    documents of ``tree``, each of its containers emptied (``{"a": {}}`` is contained in
    ``{"a": {"b": 1}}``), and the scalars of a top-level array (``'[1, 2]' @> '1'``). A contained
    document has at least one entry and all of them are among these, so a row with none of them
    is not contained."""
    out = minimal_documents(tree) + _emptied_containers(tree)
    if isinstance(tree, list):
        out += [v for v in tree if not isinstance(v, (dict, list))]
    return out


def _emptied_containers(tree: Any) -> list[Any]:
    """For each array or object in ``tree``, the minimal document reaching it, holding an empty
    one of its kind in its place."""
    if isinstance(tree, dict):
        return [{}] + [{k: sub} for k, v in tree.items() for sub in _emptied_containers(v)]
    if isinstance(tree, list):
        return [[]] + [[sub] for v in tree for sub in _emptied_containers(v)]
    return []
