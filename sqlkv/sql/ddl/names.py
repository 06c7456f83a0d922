"""Names in DDL statements (identifiers, qualified and reserved names) and the clauses
every DDL statement refuses rather than ignores (table properties, key options)."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.catalog.descriptors import TableDescriptor
from sqlkv.errors import DuplicateTable, NotSupportedError, ProgrammingError
from sqlkv.sql.virtual import virtual_table


def ident(node: Any) -> str:
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, (exp.Column, exp.Table)):
        return ident(node.this)
    if isinstance(node, exp.Ordered):
        return ident(node.this)
    return str(node.name if hasattr(node, "name") else node).lower()


# Schemas whose tables are virtual (read-only views of the catalog and the KV store).
RESERVED_SCHEMAS = ("information_schema", "sqlkv_internal", "pg_catalog")


def qualified_name(node: Any) -> str:
    """The name a table reference resolves to: ``schema.name`` for a reserved schema.

    Any other schema is refused rather than silently dropped: sqlkv has one unnamed schema
    (queries do not accept ``public.t`` either). A quoted ``"information_schema.tables"``
    keeps its dot.
    """
    if not isinstance(node, exp.Table):
        return ident(node)
    name = ident(node.this)
    if node.args.get("catalog") is not None:
        raise NotSupportedError(f'cross-database references are not supported: "{node.sql()}"')
    db = node.args.get("db")
    if db is None:
        return name
    schema = ident(db)
    if schema in RESERVED_SCHEMAS:
        return f"{schema}.{name}"
    raise NotSupportedError(f'schema "{schema}" is not supported (sqlkv has one unnamed schema): "{schema}.{name}"')


def new_name(node: Any, what: str) -> str:
    """The name of a table/view/index being created: never in a reserved schema, never dotted."""
    name = qualified_name(node)
    if "." in name:
        schema = name.split(".", 1)[0].lower()
        if schema in RESERVED_SCHEMAS:
            raise ProgrammingError(f'cannot create {what} "{name}": schema "{schema}" is reserved for system tables')
        raise ProgrammingError(f'{what} name "{name}" cannot contain "."')
    return name


def refuse_virtual(name: str, catalog, action: str) -> None:
    """DDL never targets a virtual table (information_schema.*, sqlkv_internal.*)."""
    if "." in name and virtual_table(name, catalog) is not None:
        raise ProgrammingError(f'cannot {action} virtual table "{name}"')
    if "." in name and name.split(".", 1)[0].lower() in RESERVED_SCHEMAS:
        raise ProgrammingError(f'cannot {action} "{name}": schema "{name.split(".", 1)[0].lower()}" is reserved')


def refuse_table_properties(ast: exp.Create, name: str) -> None:
    """TEMP, UNLOGGED, WITH (storage parameters), ON COMMIT...: refused, never ignored."""
    props = ast.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.TemporaryProperty):
            raise NotSupportedError(f'TEMP/TEMPORARY tables and views are not supported ("{name}")')
        if isinstance(prop, exp.UnloggedProperty):
            raise NotSupportedError(f'UNLOGGED tables are not supported ("{name}")')
        if type(prop) is exp.Property:
            raise NotSupportedError(f'storage parameter WITH ({prop.sql()}) is not supported ("{name}")')
        raise NotSupportedError(f'clause "{prop.sql()}" is not supported ("{name}")')


def refuse_key_options(node: exp.Expression, what: str) -> None:
    """PRIMARY KEY / UNIQUE extras (USING HASH, INCLUDE, DEFERRABLE, NULLS NOT DISTINCT...)."""
    if node.args.get("nulls"):
        raise NotSupportedError(f"UNIQUE NULLS NOT DISTINCT is not supported ({what})")
    options = node.args.get("options")
    if options:
        raise NotSupportedError(f"constraint option {' '.join(str(o) for o in options)} is not supported ({what})")
    params = node.args.get("include")
    if params is not None:
        extra = {k: v for k, v in params.args.items() if v and k != "with_storage"}
        if extra or params.args.get("with_storage"):
            raise NotSupportedError(f"{params.sql() or 'index parameters'} on a key is not supported ({what})")


def copy_table(table: TableDescriptor) -> TableDescriptor:
    """A private copy: descriptors from the catalog may be shared through its cache."""
    return TableDescriptor.from_dict(table.to_dict())


def check_index_name(table: TableDescriptor, name: str) -> None:
    if table.find_index(name) is not None:
        raise DuplicateTable(f'index "{name}" already exists')
