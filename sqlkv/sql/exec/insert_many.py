"""executemany of a prepared INSERT, a chunk of parameter rows at a time.

``cursor.executemany("INSERT INTO orders VALUES (?, ?, ?)", rows)`` runs the plan once per
row on the row path (`Insert.execute`): bind, build the row, one ``put_if_absent`` -- hence one
snapshot read -- per primary key and unique entry, one buffer put per pair. Here, for
`CHUNK_ROWS` rows at a time, the rows are built from the parameters directly (the VALUES items
are plain ``?``), cast and checked in one loop, encoded, and handed to the transaction as one
`Transaction.put_new_batch`: one ``get_many`` for every primary key and unique entry of the
chunk, then the pairs put in bulk.

The batch path only ever writes a chunk that the row path would write the same way. Anything
it is not sure of -- a cast or a check that fails, a key already present, in the buffer, or
twice in the chunk (an assigned id too: the row path then re-reads the maximum), a too-large
transaction -- writes nothing of the chunk and runs that chunk on the row path, which raises
the same error at the same row as always (and the statement's savepoint then undoes the whole
executemany). Auto ids are assigned, and ids given counted, row by row in order as the row
path does; the transaction's auto-id counter is put back as it was when a chunk is rejected.
Plans it does not cover (ON CONFLICT, OR REPLACE, RETURNING, foreign keys, DEFAULTs of columns
not given, inverted indexes, column families, expressions in VALUES) run every row on the row
path. ``BATCH_INSERTS = False`` (or the
environment variable ``SQLKV_INSERT_BATCH=0``) forces the row path everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from operator import itemgetter
from typing import Any

from sqlkv.encoding.key_columns import encode_column_keys
from sqlkv.encoding.keys import encode_key
from sqlkv.encoding.values import encode_row_value, encode_slots
from sqlkv.sql.context import ExecContext
from sqlkv.sql.exec.defaults import AUTO_IDS
from sqlkv.sql.exec.insert import Insert
from sqlkv.sql.exec.insert_columns import stored_as_given
from sqlkv.sql.exec.write import WriteResult, touch
from sqlkv.sql.rowstore.codec import TableCodec
from sqlkv.sql.rowstore.index import EMPTY_LIST, IndexCodec

BATCH_INSERTS = os.environ.get("SQLKV_INSERT_BATCH", "1") != "0"
CHUNK_ROWS = 512

Params = Any


class _Rejected(Exception):
    """This chunk is not for the batch path: the row path runs it."""


def batchable(plan: object) -> bool:
    """Whether executemany of this plan can go by chunks (see the module doc)."""
    if not BATCH_INSERTS or type(plan) is not Insert:
        return False
    op: Insert = plan
    codec = op.codec
    given = set(op.targets)
    no_defaults = all(fn is None for i, fn in enumerate(op.defaults.fns) if i not in given)
    return (op.param_keys is not None and op.mode == "error" and op.columns is None
            and op.fk is None and codec.single_family and not codec.inverted and no_defaults)


def execute_many(plan: Insert, ctx: ExecContext, chunks: Iterable[list[Params]]) -> WriteResult:
    """Run ``plan`` over every bound parameter row, a chunk (a list of about CHUNK_ROWS rows) at
    a time, each on the batch path when it can be, else on the row path. An error ``chunks``
    raises reaches the caller once the chunks before it have run, as in the row-by-row loop."""
    touch(ctx, plan.table.id)
    count = 0
    last_id = None
    for chunk in chunks:
        ctx.check_cancelled()
        counter = _auto_counter(plan, ctx)
        try:
            last = _write_chunk(plan, ctx, chunk)
        except Exception:  # noqa: BLE001 - _Rejected, or an error the row path raises at its row
            counter.restore()
            last = _row_path(plan, ctx, chunk)
        count += len(chunk)
        if last is not None:
            last_id = last
    return WriteResult(None, count, last_id)


def _row_path(plan: Insert, ctx: ExecContext, chunk: list[Params]) -> int | None:
    last_id = None
    for params in chunk:
        ctx.params = params
        result = plan.execute(ctx)
        if result.lastrowid is not None:
            last_id = result.lastrowid
    return last_id


class _SavedCounter:
    """The transaction's next auto id of one table as it was before a chunk."""

    def __init__(self, counters: dict[int, int] | None, table_id: int) -> None:
        self.counters = counters
        self.table_id = table_id
        self.value = None if counters is None else counters.get(table_id)

    def restore(self) -> None:
        counters = self.counters
        if counters is None:
            return
        if self.value is None:
            counters.pop(self.table_id, None)
        else:
            counters[self.table_id] = self.value


def _auto_counter(plan: Insert, ctx: ExecContext) -> _SavedCounter:
    if not plan.defaults.auto:
        return _SavedCounter(None, plan.table.id)
    return _SavedCounter(AUTO_IDS.setdefault(ctx.txn, {}), plan.table.id)


def _built_rows(plan: Insert, ctx: ExecContext, chunk: list[Params]) -> list[tuple]:
    """The chunk's full rows, cast, computed and checked (raising at the first failure)."""
    ncols = len(plan.table.columns)
    keys = plan.param_keys
    assert keys is not None
    targets = plan.targets
    identity = targets == keys == list(range(ncols))
    checker = plan.checker
    cast_row, check, generated = checker.cast_row, checker.check, checker.generated
    defaults = plan.defaults
    auto, txn = defaults.auto, ctx.txn
    if identity and not generated and stored_as_given(checker, chunk, ncols, checker.not_null + auto):
        if checker.checks:
            for row in chunk:
                check(row)
        for i in auto:  # every id given: the counter moves past the largest, as row by row
            defaults.saw_value(txn, max(row[i] for row in chunk))
        return chunk
    rows: list[tuple] = []
    blank: list[Any] = [None] * ncols
    for params in chunk:
        if identity and type(params) is tuple and len(params) == ncols:
            row = list(params)
        else:
            row = blank[:]
            for pos, k in zip(targets, keys):
                row[pos] = params[k]
        cast_row(row)
        for i in auto:  # as Insert.build_row: assign, or count the id given
            if row[i] is None:
                row[i] = defaults.next_auto(txn)
            elif isinstance(row[i], int):
                defaults.saw_value(txn, row[i])
        if generated:
            checker.compute(row)
        out = tuple(row)
        check(out)
        rows.append(out)
    return rows


def _write_chunk(plan: Insert, ctx: ExecContext, chunk: list[Params]) -> int | None:
    """Build, encode and put the chunk's rows; the last auto id, if the table has one."""
    rows = _built_rows(plan, ctx, chunk)
    codec = plan.codec
    pk_positions, pk_desc, prefix = codec.pk_positions, codec.pk_desc, codec.prefix
    if len(pk_positions) == 1 and not pk_desc[0]:
        k = pk_positions[0]
        bases = encode_column_keys([row[k] for row in rows], prefix)
    else:
        bases = [encode_key([row[p] for p in pk_positions], pk_desc, prefix) for row in rows]
    suffix = codec.fam0_suffix
    checked = list(zip([base + suffix for base in bases], _row_values(codec, rows)))
    plain: list[tuple[bytes, bytes]] = []
    if codec.indexes:
        cut = len(prefix)
        pk_bytes = [base[cut:] for base in bases]
        for ic in codec.indexes:
            if _plain_entries(ic):
                plain.extend(_plain_entries_of(ic, rows, pk_bytes))
                continue
            for row, pkb in zip(rows, pk_bytes):
                if ic.predicate is None or ic.predicate(row):
                    key, value, conditional = ic.entry(row, pkb)
                    (checked if conditional else plain).append((key, value))
    if not ctx.txn.put_new_batch(checked, plain):
        raise _Rejected
    return _last_auto_id(plan, rows)


def _row_values(codec: TableCodec, rows: list[tuple]) -> list[bytes]:
    """Each row's value as `TableCodec.family0_value` encodes it (slots picked in C when the
    table has them)."""
    slots_of = codec.slots_of
    if slots_of is not None:
        return list(map(encode_slots, map(slots_of, [(*row, None) for row in rows])))
    return list(map(encode_row_value, _stored_values(codec, rows)))


def _stored_values(codec: TableCodec, rows: list[tuple]) -> list[dict[int, Any]]:
    """Each row's stored columns as `TableCodec.family0_value` encodes them: column id ->
    value, NULLs left out."""
    stored = codec.stored_columns
    if len(stored) < 2:
        return [{cid: row[p] for cid, p in stored if row[p] is not None} for row in rows]
    ids = [cid for cid, _ in stored]
    values_of = itemgetter(*[p for _, p in stored])
    out = []
    for row in rows:
        values = values_of(row)
        if None in values:
            out.append({cid: v for cid, v in zip(ids, values) if v is not None})
        else:
            out.append(dict(zip(ids, values)))
    return out


def _plain_entries(ic: IndexCodec) -> bool:
    """Whether every row's entry is the key columns ascending, then the encoded primary key,
    with an empty value (a plain, non-unique, non-partial index storing nothing)."""
    return (not ic.unique and ic.predicate is None and ic.pk_bytes_in_key and not ic.storing_positions
            and not any(ic.key_desc))


def _plain_entries_of(ic: IndexCodec, rows: list[tuple], pk_bytes: list[bytes]) -> list[tuple[bytes, bytes]]:
    """`IndexCodec.entry` of each row, for an index `_plain_entries` accepts."""
    prefix = ic.prefix
    if len(ic.key_positions) == 1:
        k = ic.key_positions[0]
        keys = encode_column_keys([row[k] for row in rows], prefix)
    else:
        kp = ic.key_positions
        keys = [encode_key([row[p] for p in kp], None, prefix) for row in rows]
    return [(key + pkb, EMPTY_LIST) for key, pkb in zip(keys, pk_bytes)]


def _last_auto_id(plan: Insert, rows: list[tuple]) -> int | None:
    auto = plan.defaults.auto
    return rows[-1][auto[0]] if auto else None
