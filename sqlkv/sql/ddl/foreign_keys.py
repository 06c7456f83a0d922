"""FOREIGN KEY in DDL: declaring, validating and dropping constraints, and what DROP refuses.

``CREATE TABLE child (id INT PRIMARY KEY, pid INT REFERENCES parent ON DELETE CASCADE)``:
`declare_foreign_key` resolves ``parent`` (its primary key, as no columns are named),
checks the column count and types, names the constraint ``child_pid_fkey`` (PostgreSQL's
default), and makes sure ``child`` has an index led by ``pid`` -- creating
``child_auto_index_child_pid_fkey`` when none exists (as CockroachDB did before 20.2): the
checks of a parent DELETE are then a prefix scan, never a table scan. The constraint is stored
in the child's descriptor; the parent's descriptor lists the child's id in ``referenced_by``.

Keys written: the child descriptor (and its new index's entries when ADD CONSTRAINT runs on a
table with rows) and the parent descriptor. ADD CONSTRAINT reads every child row and gets the
parent key of each (`validate_existing_rows`).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlkv.catalog.descriptors import ForeignKeyDescriptor, IndexDescriptor, TableDescriptor
from sqlkv.errors import (
    DependentObjectsStillExist,
    DuplicateObject,
    InvalidForeignKey,
    NotSupportedError,
    ProgrammingError,
    UndefinedColumn,
    UndefinedTable,
)
from sqlkv.sql.exec.foreign_keys import fk_missing
from sqlkv.sql.plan.foreign_keys import key_lookup, supporting_index
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.storage.kv import prefix_end


def _ident(node) -> str:
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    return _ident(node.this) if isinstance(node, (exp.Column, exp.Table, exp.Ordered)) else str(node).lower()


def fk_actions(ref: exp.Reference, what: str) -> tuple[str, str]:
    """(ON DELETE, ON UPDATE) actions; MATCH FULL/PARTIAL and DEFERRABLE are refused."""
    on = {"delete": "NO ACTION", "update": "NO ACTION"}
    for opt in ref.args.get("options") or []:
        words = str(opt).upper().split()
        if len(words) >= 3 and words[0] == "ON" and words[1] in ("DELETE", "UPDATE"):
            action = " ".join(words[2:])
            if action not in ("NO ACTION", "RESTRICT", "CASCADE", "SET NULL", "SET DEFAULT"):
                raise NotSupportedError(f"foreign key action {action} is not supported ({what})")
            on[words[1].lower()] = action
        elif words == ["MATCH", "SIMPLE"]:
            continue
        else:
            raise NotSupportedError(f"foreign key option {' '.join(words)} is not supported ({what}); "
                                    "only MATCH SIMPLE, checked at the end of each statement")
    return on["delete"], on["update"]


def constraint_names(table: TableDescriptor) -> set[str]:
    return ({i.name.lower() for i in table.all_indexes()} | {c.name.lower() for c in table.checks}
            | {f.name.lower() for f in table.foreign_keys})


def declare_foreign_key(table: TableDescriptor, name: str | None, columns: list[str], ref: exp.Reference,
                        catalog, backfill: Callable[[TableDescriptor, IndexDescriptor], None] | None) -> TableDescriptor:
    """Add the constraint (and, if needed, its index) to ``table``; return the parent
    descriptor, changed to list ``table`` in ``referenced_by`` -- ``table`` itself for a
    self-reference, else a copy the caller stores with ``catalog.update``.

    ``backfill`` writes the entries of a new index over existing rows (ALTER TABLE); None
    when the table is new and empty."""
    target = ref.this
    ref_cols_nodes = target.expressions if isinstance(target, exp.Schema) else []
    ref_name = _ident(target.this if isinstance(target, exp.Schema) else target)
    if "." in ref_name or (isinstance(target, exp.Schema) and isinstance(target.this, exp.Table) and target.this.db):
        raise NotSupportedError(f'foreign keys reference tables of the one schema only ("{target.sql()}")')
    if ref_name.lower() == table.name.lower():
        parent = table
    else:
        found = catalog.find_table(ref_name)
        if found is None:
            raise UndefinedTable(f'relation "{ref_name}" does not exist (referenced by table "{table.name}")')
        parent = TableDescriptor.from_dict(found.to_dict())
    child_cols = [_column(table, c) for c in columns]
    if ref_cols_nodes:
        parent_cols = [_column(parent, _ident(c)) for c in ref_cols_nodes]
    else:
        parent_cols = [parent.column_by_id(c) for c in parent.primary_index.column_ids]
        if any(c.hidden for c in parent_cols):
            raise InvalidForeignKey(f'there is no primary key for referenced table "{parent.name}"')
    if len(child_cols) != len(parent_cols):
        raise InvalidForeignKey("number of referencing and referenced columns for foreign key disagree")
    if len({c.id for c in child_cols}) != len(child_cols):
        raise ProgrammingError(f'foreign key on table "{table.name}" lists a column twice')
    fk_name = name or f"{table.name}_{'_'.join(c.name for c in child_cols)}_fkey"
    if fk_name.lower() in constraint_names(table):
        raise DuplicateObject(f'constraint "{fk_name}" for relation "{table.name}" already exists')
    for c, p in zip(child_cols, parent_cols):
        if c.type.kind != p.type.kind:
            raise InvalidForeignKey(
                f'foreign key constraint "{fk_name}" cannot be implemented: key columns "{c.name}" and '
                f'"{p.name}" are of incompatible types: {c.type.sql()} and {p.type.sql()}'
            )
    on_delete, on_update = fk_actions(ref, f'constraint "{fk_name}"')
    if any(c.computed is not None for c in child_cols) and (
            on_update != "NO ACTION" and on_update != "RESTRICT" or on_delete in ("SET NULL", "SET DEFAULT")):
        raise InvalidForeignKey(f'foreign key constraint "{fk_name}": a generated column cannot be changed by '
                                f"ON DELETE {on_delete} / ON UPDATE {on_update}")
    for action in (on_delete, on_update):
        not_null = [c.name for c in child_cols if not c.nullable]
        if action == "SET NULL" and not_null:
            # CockroachDB's rule (PostgreSQL accepts it and fails at the first cascade)
            raise InvalidForeignKey(f'foreign key constraint "{fk_name}": cannot add a SET NULL cascading action '
                                    f'on column "{table.name}.{not_null[0]}" which has a NOT NULL constraint')
    fk = ForeignKeyDescriptor(fk_name, [c.id for c in child_cols], parent.id, [p.id for p in parent_cols],
                              on_delete, on_update)
    key_lookup(parent, fk.ref_column_ids)  # the referenced columns must be a primary key or unique
    if supporting_index(table, fk.column_ids) is None:
        idx = IndexDescriptor(table.next_index_id, f"{table.name}_auto_index_{fk_name}", list(fk.column_ids),
                              [False] * len(fk.column_ids))
        table.next_index_id += 1
        table.indexes.append(idx)
        if backfill is not None:
            backfill(table, idx)
    table.foreign_keys.append(fk)
    if table.id not in parent.referenced_by:
        parent.referenced_by.append(table.id)
    return parent


def _column(table: TableDescriptor, name: str):
    col = table.find_column(name)
    if col is None or col.hidden:
        raise UndefinedColumn(f'column "{name}" referenced in foreign key constraint does not exist '
                              f'in table "{table.name}"')
    return col


def validate_existing_rows(table: TableDescriptor, fk: ForeignKeyDescriptor, parent: TableDescriptor, txn) -> None:
    """ADD CONSTRAINT on a table with rows: every non-NULL key must exist in the parent."""
    codec = codec_for(table)
    lookup = key_lookup(parent, fk.ref_column_ids)
    positions = [table.column_index(c) for c in fk.column_ids]
    for row in codec.decode_rows(txn.scan(codec.prefix, prefix_end(codec.prefix))):
        vals = tuple(row[p] for p in positions)
        if None in vals or lookup.exists(txn, vals):
            continue
        raise fk_missing(table, fk, [table.columns[p].name for p in positions], vals, parent)


def drop_foreign_key(table: TableDescriptor, fk: ForeignKeyDescriptor, catalog) -> None:
    """Remove a constraint from ``table``; the parent forgets ``table`` when no other
    constraint of it references the parent. The caller stores ``table``."""
    table.foreign_keys = [f for f in table.foreign_keys if f is not fk]
    if any(f.ref_table_id == fk.ref_table_id for f in table.foreign_keys):
        return
    if fk.ref_table_id == table.id:
        table.referenced_by = [i for i in table.referenced_by if i != table.id]
        return
    _forget_child(catalog, fk.ref_table_id, table.id)


def _forget_child(catalog, parent_id: int, child_id: int) -> None:
    parent = catalog.table_by_id(parent_id)
    if parent is not None and child_id in parent.referenced_by:
        parent.referenced_by = [i for i in parent.referenced_by if i != child_id]
        catalog.update(parent)


def before_drop_table(desc: TableDescriptor, dropping: set[int], cascade: bool, catalog) -> None:
    """DROP TABLE: refuse while another table's constraint references ``desc`` (unless
    CASCADE, which drops those constraints, as PostgreSQL does); unlink ``desc``'s own."""
    for child_id in desc.referenced_by:
        if child_id == desc.id or child_id in dropping:
            continue
        child = catalog.table_by_id(child_id)
        if child is None:
            continue
        fks = [f for f in child.foreign_keys if f.ref_table_id == desc.id]
        if not cascade:
            raise DependentObjectsStillExist(
                f'cannot drop table "{desc.name}" because other objects depend on it: constraint '
                f'"{fks[0].name if fks else "?"}" on table "{child.name}" depends on table "{desc.name}" '
                "(use DROP TABLE ... CASCADE to drop the constraints too)"
            )
        for fk in fks:
            child.foreign_keys = [f for f in child.foreign_keys if f is not fk]
        catalog.update(child)
    for parent_id in {f.ref_table_id for f in desc.foreign_keys}:
        if parent_id != desc.id and parent_id not in dropping:
            _forget_child(catalog, parent_id, desc.id)


def refuse_column_drop(table: TableDescriptor, col, catalog) -> None:
    """A column in a foreign key (either side) cannot be dropped while the constraint exists."""
    for fk in table.foreign_keys:
        if col.id in fk.column_ids:
            raise ProgrammingError(f'cannot drop column "{col.name}": foreign key constraint "{fk.name}" uses it')
    for child_id in table.referenced_by:
        child = table if child_id == table.id else catalog.table_by_id(child_id)
        for fk in child.foreign_keys if child is not None else []:
            if fk.ref_table_id == table.id and col.id in fk.ref_column_ids:
                raise ProgrammingError(f'cannot drop column "{col.name}": foreign key constraint "{fk.name}" '
                                       f'on table "{child.name}" references it')


def refuse_index_drop(table: TableDescriptor, idx: IndexDescriptor, catalog) -> None:
    """An index a foreign key needs (its referencing scan, or the referenced unique key) stays."""
    rest = TableDescriptor.from_dict(table.to_dict())
    rest.indexes = [i for i in rest.indexes if i.id != idx.id]
    for fk in table.foreign_keys:
        if supporting_index(rest, fk.column_ids) is None:
            raise ProgrammingError(f'cannot drop index "{idx.name}": foreign key constraint "{fk.name}" needs it '
                                   "(drop the constraint first)")
    for child_id in table.referenced_by:
        child = table if child_id == table.id else catalog.table_by_id(child_id)
        for fk in child.foreign_keys if child is not None else []:
            if fk.ref_table_id != table.id:
                continue
            try:
                key_lookup(rest, fk.ref_column_ids)
            except ProgrammingError:
                raise ProgrammingError(f'cannot drop index "{idx.name}": foreign key constraint "{fk.name}" on '
                                       f'table "{child.name}" references its columns') from None
