"""Set-returning JSONB functions in FROM (issue 15): jsonb_each, jsonb_each_text,
jsonb_object_keys, jsonb_array_elements, jsonb_array_elements_text.

``SELECT t.id, e.key FROM t, jsonb_each(t.doc) AS e`` plans a `JsonbRows` whose argument reads the
current row of ``t`` (a table function is implicitly LATERAL, as generate_series). Each call
yields one row per object pair or array element; a NULL argument yields no rows; WITH
ORDINALITY adds the row number. The rows are computed from the argument's value; nothing is read
from the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlkv.encoding.jsonb import Jsonb
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.expr import jsonb_ops as ops

RowFn = Callable[[tuple], Any]


def _each(doc: Jsonb, name: str) -> list[tuple]:
    return [(k, Jsonb(v)) for k, v in ops.object_pairs(doc, name)]


def _each_text(doc: Jsonb, name: str) -> list[tuple]:
    return [(k, ops.text_of(v)) for k, v in ops.object_pairs(doc, name)]


def _keys(doc: Jsonb, name: str) -> list[tuple]:
    return [(k,) for k, _ in ops.object_pairs(doc, name)]


def _elements(doc: Jsonb, name: str) -> list[tuple]:
    return [(Jsonb(v),) for v in ops.array_items(doc, name)]


def _elements_text(doc: Jsonb, name: str) -> list[tuple]:
    return [(ops.text_of(v),) for v in ops.array_items(doc, name)]


# name -> (expansion, output column names and kinds; None: the alias names the column)
EXPANSIONS: dict[str, tuple[Callable[[Jsonb, str], list[tuple]], list[tuple[str | None, str]]]] = {
    "jsonb_each": (_each, [("key", "TEXT"), ("value", "JSONB")]),
    "jsonb_each_text": (_each_text, [("key", "TEXT"), ("value", "TEXT")]),
    "jsonb_object_keys": (_keys, [(None, "TEXT")]),
    "jsonb_array_elements": (_elements, [("value", "JSONB")]),
    "jsonb_array_elements_text": (_elements_text, [("value", "TEXT")]),
}


class JsonbRows(Operator):
    """One row per pair/element of a JSONB argument (see the module docstring)."""

    def __init__(self, name: str, arg: RowFn, columns: list[Column], ordinality: bool, text: str) -> None:
        self.name = name
        self.arg = arg
        self.expand = EXPANSIONS[name][0]
        self.columns = columns
        self.ordinality = ordinality
        self.text = text

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        value = self.arg(())
        if value is None:
            return
        rows = self.expand(ops.as_doc(value, f"{self.name}()"), f"{self.name}()")
        if not self.ordinality:
            yield from rows
            return
        for n, row in enumerate(rows, 1):
            yield (*row, n)

    def describe(self) -> str:
        return f"{self.name}({self.text})"
