"""Planning foreign-key work for a write statement: which tables, lookups and scans it needs.

For ``DELETE FROM parent`` where ``child.pid REFERENCES parent ON DELETE CASCADE`` and
``grandchild.cid REFERENCES child ON DELETE SET NULL``, `fk_plan` builds a `TableFk` for
parent, child and grandchild (following ``referenced_by`` ids through the catalog; a
self-reference or a cycle reuses the entry already built), each with:

- its outbound constraints: how to look the parent key up (`KeyLookup`: a get on the
  parent's primary key, or on the unique index the constraint references);
- its inbound constraints: how to find referencing rows (`ReferencingScan`: a prefix scan of
  the child's primary key or of the index led by the FK columns -- CREATE TABLE / ADD
  CONSTRAINT make sure one exists) and the compiled SET DEFAULT values.

Built once per SQL text with the plan; any DDL bumps the schema version and replans.
"""

from __future__ import annotations

from sqlkv.catalog.descriptors import ForeignKeyDescriptor, TableDescriptor
from sqlkv.encoding.keys import family_suffix, index_prefix
from sqlkv.errors import InvalidForeignKey, ProgrammingError
from sqlkv.sql.exec.foreign_keys import FkPlan, Inbound, KeyLookup, Outbound, ReferencingScan, TableFk
from sqlkv.sql.plan.dml_parts import column_defaults, row_checker
from sqlkv.sql.rowstore.codec import codec_for


def fk_plan(table: TableDescriptor, catalog, env) -> FkPlan | None:
    """The foreign-key work of writes to ``table``, or None when it has no constraints."""
    if not table.foreign_keys and not table.referenced_by:
        return None
    tables: dict[int, TableFk] = {}
    root = _table_fk(table, catalog, env, tables)
    return FkPlan(root, tables)


def _table_fk(table: TableDescriptor, catalog, env, tables: dict[int, TableFk]) -> TableFk:
    known = tables.get(table.id)
    if known is not None:
        return known
    checker = row_checker(table, table.name, env)
    tf = TableFk(table, codec_for(table), checker.finish)
    tables[table.id] = tf
    for fk in table.foreign_keys:
        parent = table if fk.ref_table_id == table.id else _by_id(catalog, fk.ref_table_id, fk)
        tf.outbound.append(Outbound(fk, table, [table.column_index(c) for c in fk.column_ids],
                                    key_lookup(parent, fk.ref_column_ids)))
    for child_id in table.referenced_by:
        child = table if child_id == table.id else catalog.table_by_id(child_id)
        if child is None:
            continue
        defaults = column_defaults(child, env)
        for fk in child.foreign_keys:
            if fk.ref_table_id != table.id:
                continue
            ctf = _table_fk(child, catalog, env, tables)
            tf.inbound.append(Inbound(
                fk, table, [table.column_index(c) for c in fk.ref_column_ids], ctf,
                [child.column_index(c) for c in fk.column_ids], referencing_scan(child, fk),
                key_lookup(table, fk.ref_column_ids), defaults.value,
            ))
    return tf


def _by_id(catalog, table_id: int, fk: ForeignKeyDescriptor) -> TableDescriptor:
    parent = catalog.table_by_id(table_id)
    if parent is None:
        raise ProgrammingError(f'table referenced by foreign key constraint "{fk.name}" does not exist')
    return parent


def key_lookup(parent: TableDescriptor, ref_column_ids: list[int]) -> KeyLookup:
    """How to test that a referenced key exists: the primary key, else a full unique index."""
    pk = parent.primary_index
    if sorted(pk.column_ids) == sorted(ref_column_ids):
        order = [ref_column_ids.index(c) for c in pk.column_ids]
        return KeyLookup(parent, index_prefix(parent.id, pk.id), order, list(pk.descending), family_suffix(0))
    for idx in parent.indexes:
        if idx.unique and idx.predicate is None and sorted(idx.column_ids) == sorted(ref_column_ids):
            order = [ref_column_ids.index(c) for c in idx.column_ids]
            return KeyLookup(parent, index_prefix(parent.id, idx.id), order, list(idx.descending), b"")
    raise InvalidForeignKey(f'there is no unique constraint matching given keys for referenced table "{parent.name}"')


def referencing_scan(child: TableDescriptor, fk: ForeignKeyDescriptor) -> ReferencingScan:
    """The prefix scan finding the child rows with a given key (see `supporting_index`)."""
    codec = codec_for(child)
    idx = supporting_index(child, fk.column_ids)
    if idx is None:
        raise ProgrammingError(f'foreign key constraint "{fk.name}" on table "{child.name}" has no index')
    n = len(fk.column_ids)
    order = [fk.column_ids.index(c) for c in idx.column_ids[:n]]
    if idx.id == child.primary_index.id:
        return ReferencingScan(codec, None, order, list(idx.descending[:n]))
    ic = next(ic for ic in codec.indexes if ic.index.id == idx.id)
    return ReferencingScan(codec, ic, order, list(idx.descending[:n]))


def supporting_index(table: TableDescriptor, column_ids: list[int]):
    """The primary key or a full (non-partial) index whose leading columns are ``column_ids``
    in any order: a prefix scan of it finds the rows with a given foreign key."""
    want = sorted(column_ids)
    for idx in table.ordered_indexes():
        if idx.predicate is None and sorted(idx.column_ids[: len(want)]) == want:
            return idx
    return None
