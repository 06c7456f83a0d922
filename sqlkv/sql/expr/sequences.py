"""nextval / currval / lastval / setval: the SQL face of `sqlkv.catalog.sequences`.

``INSERT INTO t (id) VALUES (nextval('t_id_seq'))`` resolves the sequence through the
statement's catalog (a descriptor read in its transaction, cached), then advances the counter
in a transaction of its own (`sqlkv.catalog.sequences.advance`). currval and lastval read the
values this session got, kept in ``ctx.extra["sequences"]`` (the session binds its own dict
into every context it runs), as in PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.catalog.sequences import SequenceDescriptor, advance, assign
from sqlkv.errors import NotSupportedError, ObjectNotInPrerequisiteState, UndefinedTable


def changes_sequences(ast: exp.Expression) -> bool:
    """Whether a statement calls nextval or setval (its SELECT must run eagerly)."""
    return any(isinstance(n, exp.Anonymous) and str(n.this).lower() in ("nextval", "setval") for n in ast.walk())


def _sequence(ctx: Any, name: str) -> SequenceDescriptor:
    catalog = ctx.catalog
    desc = catalog.find_sequence(name.strip().lower()) if catalog is not None else None
    if desc is None:
        raise UndefinedTable(f'sequence "{name}" does not exist')
    return desc


def _seen(ctx: Any) -> dict:
    return ctx.extra.setdefault("sequences", {})


def _refuse_in_the_past(ctx: Any, fn: str) -> None:
    """nextval/setval write the current counter: not from a read of the past."""
    if getattr(ctx.txn, "as_of", None) is not None:
        raise NotSupportedError(f"{fn}() cannot run in a read AS OF SYSTEM TIME: it writes the "
                                f"sequence's current counter, and such reads are read-only")


def nextval(ctx: Any, name: str) -> int:
    _refuse_in_the_past(ctx, "nextval")
    desc = _sequence(ctx, name)
    value = advance(ctx.txn.manager, desc)
    seen = _seen(ctx)
    seen[desc.id] = value
    seen["last"] = value
    return value


def currval(ctx: Any, name: str) -> int:
    desc = _sequence(ctx, name)
    value = _seen(ctx).get(desc.id)
    if value is None:
        raise ObjectNotInPrerequisiteState(f'currval of sequence "{desc.name}" is not yet defined in this session')
    return value


def lastval(ctx: Any) -> int:
    value = _seen(ctx).get("last")
    if value is None:
        raise ObjectNotInPrerequisiteState("lastval is not yet defined in this session")
    return value


def setval(ctx: Any, name: str, value: int, called: bool = True) -> int:
    _refuse_in_the_past(ctx, "setval")
    desc = _sequence(ctx, name)
    assign(ctx.txn.manager, desc, value, bool(called))
    if called:
        _seen(ctx)[desc.id] = value
    return value
