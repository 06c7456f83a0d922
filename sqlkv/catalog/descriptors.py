"""Schema descriptors: what the catalog stores about tables, columns, indexes and views.

``CREATE TABLE users (id INT PRIMARY KEY, email TEXT UNIQUE)`` becomes one `TableDescriptor`
with two `ColumnDescriptor` (ids 1 and 2), a primary `IndexDescriptor` (id 1, ``users_pkey``,
column ids [1]) and a unique secondary index (id 2, ``users_email_key``, column ids [2]). The
descriptor is serialised with `to_dict` (plain msgpack-able data) into the descriptor system
table; every layer above reads it back with `from_dict`.

Ids never get reused within a table: dropping column 2 and adding another gives it id 3, so
stale values still present in old rows under id 2 are simply ignored when rows are decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlkv.errors import ProgrammingError, UndefinedColumn
from sqlkv.catalog.sequences import SequenceDescriptor
from sqlkv.catalog.types import SqlType

PRIMARY_INDEX_ID = 1


@dataclass
class ColumnDescriptor:
    id: int
    name: str
    type: SqlType
    nullable: bool = True
    default_sql: str | None = None
    hidden: bool = False  # the implicit rowid: not part of SELECT *
    auto_increment: bool = False  # rowid / INTEGER PRIMARY KEY: max+1 when omitted
    family_id: int = 0
    identity: str | None = None  # "ALWAYS" | "BY DEFAULT": GENERATED ... AS IDENTITY (default nextval)
    computed: str | None = None  # GENERATED ALWAYS AS (expr): its SQL text over the other columns
    virtual: bool = False  # a computed column that is not stored: computed whenever a row is read

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type.to_dict(),
            "nullable": self.nullable,
            "default": self.default_sql,
            "hidden": self.hidden,
            "auto": self.auto_increment,
            "family": self.family_id,
            **({"identity": self.identity} if self.identity else {}),
            **({"computed": self.computed, "virtual": self.virtual} if self.computed else {}),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ColumnDescriptor:
        return ColumnDescriptor(
            id=d["id"],
            name=d["name"],
            type=SqlType.from_dict(d["type"]),
            nullable=d["nullable"],
            default_sql=d["default"],
            hidden=d["hidden"],
            auto_increment=d["auto"],
            family_id=d["family"],
            identity=d.get("identity"),
            computed=d.get("computed"),
            virtual=d.get("virtual", False),
        )


@dataclass
class IndexDescriptor:
    id: int
    name: str
    column_ids: list[int]
    descending: list[bool]
    unique: bool = False
    storing: list[int] = field(default_factory=list)
    # A partial index's WHERE predicate (SQL text over the table's column names): only rows
    # for which it is TRUE have an entry, and a unique partial index constrains only those.
    predicate: str | None = None
    # An inverted index (ARRAY / JSONB column): one entry per element or JSON path, keyed
    # element then primary key (sqlkv/sql/rowstore/inverted.py); never unique, partial or STORING.
    inverted: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "name": self.name,
            "columns": list(self.column_ids),
            "desc": list(self.descending),
            "unique": self.unique,
            "storing": list(self.storing),
        }
        if self.predicate is not None:
            d["where"] = self.predicate
        if self.inverted:
            d["inverted"] = True
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> IndexDescriptor:
        return IndexDescriptor(
            d["id"], d["name"], list(d["columns"]), list(d["desc"]), d["unique"], list(d["storing"]), d.get("where"),
            bool(d.get("inverted", False)),
        )


@dataclass
class FamilyDescriptor:
    id: int
    name: str
    column_ids: list[int]
    # ``FAMILY f (tags) WITH (layout = exploded)``: the family's one ARRAY/JSONB column is stored
    # as a header key plus one key per element (sqlkv/sql/rowstore/exploded.py), not packed.
    exploded: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "name": self.name, "columns": list(self.column_ids)}
        if self.exploded:
            d["layout"] = "exploded"
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> FamilyDescriptor:
        return FamilyDescriptor(d["id"], d["name"], list(d["columns"]), d.get("layout") == "exploded")


@dataclass
class CheckDescriptor:
    name: str
    expr_sql: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "expr": self.expr_sql}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> CheckDescriptor:
        return CheckDescriptor(d["name"], d["expr"])


FK_ACTIONS = ("NO ACTION", "RESTRICT", "CASCADE", "SET NULL", "SET DEFAULT")


@dataclass
class ForeignKeyDescriptor:
    """``FOREIGN KEY (column_ids) REFERENCES ref_table_id (ref_column_ids)``, kept on the
    referencing (child) table. The referenced (parent) table lists the child's id in its
    ``referenced_by``, so a DELETE on the parent finds the constraints it must enforce."""

    name: str
    column_ids: list[int]
    ref_table_id: int
    ref_column_ids: list[int]
    on_delete: str = "NO ACTION"
    on_update: str = "NO ACTION"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "columns": list(self.column_ids), "ref_table": self.ref_table_id,
                "ref_columns": list(self.ref_column_ids), "on_delete": self.on_delete, "on_update": self.on_update}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ForeignKeyDescriptor:
        return ForeignKeyDescriptor(d["name"], list(d["columns"]), d["ref_table"], list(d["ref_columns"]),
                                    d["on_delete"], d["on_update"])


@dataclass
class TableDescriptor:
    id: int
    name: str
    columns: list[ColumnDescriptor]
    primary_index: IndexDescriptor
    indexes: list[IndexDescriptor] = field(default_factory=list)
    families: list[FamilyDescriptor] = field(default_factory=list)
    checks: list[CheckDescriptor] = field(default_factory=list)
    foreign_keys: list[ForeignKeyDescriptor] = field(default_factory=list)
    referenced_by: list[int] = field(default_factory=list)  # ids of tables with an FK to this one
    version: int = 1
    next_column_id: int = 1
    next_index_id: int = 2
    next_family_id: int = 1
    virtual: Any = None  # set on the descriptors of information_schema / sqlkv_internal tables

    kind = "table"

    def column(self, name: str) -> ColumnDescriptor:
        lname = name.lower()
        for col in self.columns:
            if col.name.lower() == lname:
                return col
        raise UndefinedColumn(f'column "{name}" of relation "{self.name}" does not exist')

    def find_column(self, name: str) -> ColumnDescriptor | None:
        lname = name.lower()
        for col in self.columns:
            if col.name.lower() == lname:
                return col
        return None

    def column_index(self, column_id: int) -> int:
        """Position of a column (by id) in the table's row tuples."""
        for i, col in enumerate(self.columns):
            if col.id == column_id:
                return i
        raise ProgrammingError(f"column id {column_id} is not in table {self.name}")

    def column_by_id(self, column_id: int) -> ColumnDescriptor:
        return self.columns[self.column_index(column_id)]

    def all_indexes(self) -> list[IndexDescriptor]:
        return [self.primary_index, *self.indexes]

    def ordered_indexes(self) -> list[IndexDescriptor]:
        """The primary and secondary btree indexes (not the inverted ones): those a span over
        column values, a lookup by key or a uniqueness check can use."""
        return [i for i in self.all_indexes() if not i.inverted]

    def find_index(self, name: str) -> IndexDescriptor | None:
        lname = name.lower()
        for idx in self.all_indexes():
            if idx.name.lower() == lname:
                return idx
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "table",
            "id": self.id,
            "name": self.name,
            "columns": [c.to_dict() for c in self.columns],
            "primary": self.primary_index.to_dict(),
            "indexes": [i.to_dict() for i in self.indexes],
            "families": [f.to_dict() for f in self.families],
            "checks": [c.to_dict() for c in self.checks],
            "fks": [f.to_dict() for f in self.foreign_keys],
            "referenced_by": list(self.referenced_by),
            "version": self.version,
            "next_column_id": self.next_column_id,
            "next_index_id": self.next_index_id,
            "next_family_id": self.next_family_id,
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> TableDescriptor:
        return TableDescriptor(
            id=d["id"],
            name=d["name"],
            columns=[ColumnDescriptor.from_dict(c) for c in d["columns"]],
            primary_index=IndexDescriptor.from_dict(d["primary"]),
            indexes=[IndexDescriptor.from_dict(i) for i in d["indexes"]],
            families=[FamilyDescriptor.from_dict(f) for f in d["families"]],
            checks=[CheckDescriptor.from_dict(c) for c in d["checks"]],
            foreign_keys=[ForeignKeyDescriptor.from_dict(f) for f in d.get("fks", ())],
            referenced_by=list(d.get("referenced_by", ())),
            version=d["version"],
            next_column_id=d["next_column_id"],
            next_index_id=d["next_index_id"],
            next_family_id=d["next_family_id"],
        )


@dataclass
class ViewDescriptor:
    id: int
    name: str
    query_sql: str
    column_names: list[str] | None = None

    kind = "view"

    @property
    def columns(self) -> list[str] | None:
        return self.column_names

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "view", "id": self.id, "name": self.name, "query": self.query_sql, "columns": self.column_names}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ViewDescriptor:
        return ViewDescriptor(d["id"], d["name"], d["query"], d["columns"])


def descriptor_from_dict(d: dict[str, Any]) -> TableDescriptor | ViewDescriptor:
    if d.get("kind") == "view":
        return ViewDescriptor.from_dict(d)
    if d.get("kind") == "sequence":
        return SequenceDescriptor.from_dict(d)  # type: ignore[return-value]
    return TableDescriptor.from_dict(d)
