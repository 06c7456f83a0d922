"""Predicates applied to a whole batch of rows at once (`Filter.batches`).

A WHERE clause compiles to a closure per row (`compile_predicate`); a filter over a batch of
256 rows then pays a Python call per row. The commonest shapes -- a column compared with a
constant, and ANDs of those -- also carry a *batch filter*: one list comprehension that reads
the column inline (``[r for r in batch if (a := r[3]) is not None and a > 10]``), about
half the cost per row. The batch filter keeps exactly the rows the row predicate keeps.

The same shapes also carry their *column terms* ``[(position, op, constant), ...]``: a scan
that hands out column lists instead of rows (exec/columnar.py) is filtered by a mask built
from those lists (`column_mask`), one comprehension per term, each later term evaluated only
where the earlier ones held (as ``and`` and the batch filter evaluate them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlkv.sql.expr.env import RowFn

BatchFilter = Callable[[list[tuple]], list[tuple]]

_COLUMN_CONST: dict[str, Callable[[int, object], BatchFilter]] = {
    "=": lambda i, c: lambda batch: [r for r in batch if (a := r[i]) is not None and a == c],
    "<>": lambda i, c: lambda batch: [r for r in batch if (a := r[i]) is not None and a != c],
    "<": lambda i, c: lambda batch: [r for r in batch if (a := r[i]) is not None and a < c],
    "<=": lambda i, c: lambda batch: [r for r in batch if (a := r[i]) is not None and a <= c],
    ">": lambda i, c: lambda batch: [r for r in batch if (a := r[i]) is not None and a > c],
    ">=": lambda i, c: lambda batch: [r for r in batch if (a := r[i]) is not None and a >= c],
}

# the attribute of a row predicate holding its batch filter, when it has one
_ATTRIBUTE = "batch_filter"
# ... and the one holding its column terms
_TERMS = "column_terms"

ColumnTerm = tuple[int, str, object]  # (row position, comparison operator, constant)
Mask = list[bool]

# a first term's mask over one column: True where ``value op c`` is TRUE
_FIRST_MASK: dict[str, Callable[[object], Callable[[list], Mask]]] = {
    "=": lambda c: lambda col: [a is not None and a == c for a in col],
    "<>": lambda c: lambda col: [a is not None and a != c for a in col],
    "<": lambda c: lambda col: [a is not None and a < c for a in col],
    "<=": lambda c: lambda col: [a is not None and a <= c for a in col],
    ">": lambda c: lambda col: [a is not None and a > c for a in col],
    ">=": lambda c: lambda col: [a is not None and a >= c for a in col],
}

# a later term's mask: compared only where the mask so far holds
_NEXT_MASK: dict[str, Callable[[object], Callable[[Mask, list], Mask]]] = {
    "=": lambda c: lambda mask, col: [m and a is not None and a == c for m, a in zip(mask, col)],
    "<>": lambda c: lambda mask, col: [m and a is not None and a != c for m, a in zip(mask, col)],
    "<": lambda c: lambda mask, col: [m and a is not None and a < c for m, a in zip(mask, col)],
    "<=": lambda c: lambda mask, col: [m and a is not None and a <= c for m, a in zip(mask, col)],
    ">": lambda c: lambda mask, col: [m and a is not None and a > c for m, a in zip(mask, col)],
    ">=": lambda c: lambda mask, col: [m and a is not None and a >= c for m, a in zip(mask, col)],
}


def with_column_const_batch(pred: RowFn, op: str, i: int, c: object) -> RowFn:
    """``pred`` (``row[i] op c`` is TRUE), given its batch filter."""
    setattr(pred, _ATTRIBUTE, _COLUMN_CONST[op](i, c))
    setattr(pred, _TERMS, [(i, op, c)])
    return pred


def with_conjunction_batch(pred: RowFn, parts: Sequence[RowFn]) -> RowFn:
    """``pred`` (every one of ``parts`` is TRUE), given a batch filter when each part has
    one: the parts filter the batch in turn, each seeing only the rows the earlier kept, as
    ``and`` evaluates them."""
    filters = [getattr(p, _ATTRIBUTE, None) for p in parts]
    if all(f is not None for f in filters):
        def each_in_turn(batch: list[tuple]) -> list[tuple]:
            for f in filters:
                batch = f(batch)  # type: ignore[misc]
                if not batch:
                    break
            return batch

        setattr(pred, _ATTRIBUTE, each_in_turn)
        terms = [getattr(p, _TERMS, None) for p in parts]
        if all(t is not None for t in terms):
            setattr(pred, _TERMS, [term for t in terms for term in t])  # type: ignore[union-attr]
    return pred


def batch_filter(pred: RowFn) -> BatchFilter:
    """The rows of a batch for which ``pred`` is true, as one function over the batch."""
    own = getattr(pred, _ATTRIBUTE, None)
    if own is not None:
        return own
    return lambda batch: [row for row in batch if pred(row)]


def column_terms(pred: RowFn) -> list[ColumnTerm] | None:
    """``pred``'s column terms (all of them must be TRUE), or None when it has none."""
    return getattr(pred, _TERMS, None)


def column_mask(terms: list[ColumnTerm]) -> Callable[[dict[int, list]], Mask]:
    """A function from a batch's column lists (row position -> values) to the mask of the
    rows for which every term is TRUE."""
    (i, op, c), rest = terms[0], terms[1:]
    first = _FIRST_MASK[op](c)
    later = [(j, _NEXT_MASK[op2](c2)) for j, op2, c2 in rest]

    def mask(columns: dict[int, list]) -> Mask:
        m = first(columns[i])
        for j, narrow in later:
            if True not in m:
                break
            m = narrow(m, columns[j])
        return m

    return mask
