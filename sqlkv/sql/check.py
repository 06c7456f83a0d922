"""The consistency checker behind ``CHECK DATABASE`` and ``sqlkv check DB``.

For every table it walks the primary index once, and for each row computes the entry every
secondary index must hold (`IndexCodec.entry`; one per distinct element for an inverted index,
`InvertedCodec.entries`); it then walks each secondary index and checks
that every entry is exactly one of those expected. Problems are reported as text naming the
table, the index and the key in key grammar:

    users: index users_email_key: missing entry /users/users_email_key/"a@b.c"
    users: index users_email_key: dangling entry /users/users_email_key/"x@y.z" (no such row)

Memory: the expected entries of one index at a time (key -> value) -- proportional to the
table's row count, which a consistency check of the whole database accepts.
"""

from __future__ import annotations

from sqlkv.encoding.keys import decode_uvarint, table_prefix
from sqlkv.encoding.pretty import pretty_key
from sqlkv.errors import CorruptionError
from sqlkv.sql.context import ExecContext
from sqlkv.catalog.pending_builds import pending_index_ids
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.display import names_lookup
from sqlkv.sql.rowstore.exploded import Broken, exploded_rows
from sqlkv.sql.rowstore.inverted import InvertedCodec
from sqlkv.storage.kv import prefix_end


def database_problems(engine, catalog_of, ctx_of) -> list[str]:
    """``CHECK DATABASE``: the storage engine's problems, then the catalog's (``catalog_of()``
    and its context ``ctx_of()``, made after the storage was verified)."""
    problems = [f"storage: {p}" for p in engine.verify()]
    try:
        catalog = catalog_of()
        problems += check_catalog(catalog, ctx_of())
    except CorruptionError as exc:  # already named by the storage half, if it is a file
        problems.append(f"data unreadable: {exc}")
    return problems


def check_catalog(catalog, ctx: ExecContext | None = None, limit: int = 1000) -> list[str]:
    """Problems found in every table's indexes (empty list: consistent)."""
    problems: list[str] = []
    tables = catalog.list_tables()
    names = names_lookup({t.id: t for t in tables})
    for table in tables:
        problems.extend(_check_table(catalog.txn, table, names, ctx))
        if len(problems) >= limit:
            problems = problems[:limit] + [f"... stopped after {limit} problems"]
            break
    return problems


def _check_table(txn, table, names, ctx) -> list[str]:
    codec = codec_for(table)
    out: list[str] = []
    rows = []
    broken: list[Broken] = []
    ctx = ctx or ExecContext()
    try:
        with ctx.progress(f'checking "{table.name}"') as wrap:  # a bar on a terminal, for big tables
            pairs = txn.scan(codec.prefix, prefix_end(codec.prefix))
            # an exploded value that is not whole (a missing or extra element) is reported, not raised
            scan = exploded_rows(codec, pairs, broken) if codec.exploded else codec.decode_rows(pairs)
            for n, row in enumerate(wrap(scan, label="rows")):
                if n % 1024 == 0:
                    ctx.check_cancelled()
                rows.append(row)
    except CorruptionError as e:
        return [f"{table.name}: primary index unreadable: {e}"]
    out.extend(f'{table.name}: exploded column "{column}" at {pretty_key(key, names)}: {problem}'
               for column, key, problem in broken)
    for row in rows:
        for key, value in codec.primary_kvs(row):
            if key.endswith(codec.fam0_suffix) and value is None:
                out.append(f"{table.name}: row {pretty_key(key, names)} has no family-0 key")
    for ic in [*codec.indexes, *codec.inverted]:
        expected = {}
        for row in rows:
            if not ic.holds(row):
                continue  # a partial index holds only the rows its predicate accepts
            for key, value in _entries(ic, row):
                if key in expected:
                    out.append(f"{table.name}: index {ic.name}: two rows map to entry {pretty_key(key, names)}")
                expected[key] = value
        for key, value in txn.scan(ic.prefix, prefix_end(ic.prefix)):
            want = expected.pop(key, None)
            if want is None:
                out.append(f"{table.name}: index {ic.name}: dangling entry {pretty_key(key, names)} (no such row)")
            elif want != value:
                out.append(f"{table.name}: index {ic.name}: entry {pretty_key(key, names)} has a stale value")
        for key in expected:
            out.append(f"{table.name}: index {ic.name}: missing entry {pretty_key(key, names)}")
    # keys under the table prefix that belong to no index
    known = {1} | {ic.index.id for ic in [*codec.indexes, *codec.inverted]}
    known |= pending_index_ids(txn, table.id)  # a CREATE INDEX building by ingestion (not yet public)
    start = table_prefix(table.id)
    for key, _ in txn.scan(start, prefix_end(start)):
        _t, off = decode_uvarint(key, 0)
        iid, _ = decode_uvarint(key, off)
        if iid not in known:
            out.append(f"{table.name}: key {pretty_key(key, names)} belongs to no index")
            break
    return out


def _entries(ic, row: tuple) -> list[tuple[bytes, bytes]]:
    """The entries a row must have in one index: one for a btree index, one per distinct
    element for an inverted index."""
    if isinstance(ic, InvertedCodec):
        return list(ic.entries(row).items())
    key, value, _cond = ic.entry(row)
    return [(key, value)]


def check_database(session) -> list[str]:
    """Problems found in the session's database (for the CLI's ``sqlkv check DB``)."""
    result = session.execute("CHECK DATABASE")
    return [row[0] for row in result]
