"""CREATE / DROP SEQUENCE and the sequences behind identity columns.

``CREATE SEQUENCE s START 10 INCREMENT BY 5 MAXVALUE 100 CYCLE`` writes a
`SequenceDescriptor` through the catalog (namespace + descriptor keys, like a table's); its
counter key ``/Table/3/1/<id>`` is written only by the first nextval. ``DROP SEQUENCE s``
removes both. ``id INT GENERATED ALWAYS AS IDENTITY (START WITH 100)`` in CREATE TABLE
creates the sequence ``<table>_<column>_seq`` owned by that column: the column's default is
``nextval('<table>_<column>_seq')``, and DROP TABLE (or DROP COLUMN) drops it too.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.catalog.sequences import INT64_MAX, INT64_MIN, SequenceDescriptor, counter_key
from sqlkv.errors import (
    DependentObjectsStillExist,
    DuplicateTable,
    NotSupportedError,
    ProgrammingError,
    UndefinedTable,
)
from sqlkv.sql.context import Scope
from sqlkv.sql.ddl.names import new_name, qualified_name
from sqlkv.sql.expr import compile_expr


def _int_option(node: exp.Expression, what: str, env) -> int:
    value = compile_expr(node, Scope([]), env)(())
    if not isinstance(value, int) or isinstance(value, bool) or not INT64_MIN <= value <= INT64_MAX:
        raise ProgrammingError(f"{what} must be a 64-bit integer, not {node.sql()}")
    return value


def sequence_options(name: str, args: dict, env, seq_id: int) -> SequenceDescriptor:
    """A descriptor from CREATE SEQUENCE's (or an identity's) options, with PostgreSQL's
    defaults and checks. ``args`` maps start/increment/minvalue/maxvalue/cache/cycle."""
    options = {str(o).upper() for o in args.get("options") or []}
    for key in ("owned", "expression"):
        if args.get(key) is not None:
            raise NotSupportedError(f'sequence option {key.upper()} is not supported (sequence "{name}")')
    if args.get("cache") is not None and _int_option(args["cache"], "CACHE", env) != 1:
        raise NotSupportedError(f'CACHE greater than 1 is not supported (sequence "{name}"): '
                                "each nextval commits its own counter update")
    # NO MINVALUE / NO MAXVALUE / NO CYCLE name the defaults: the parser cuts them
    # (sqlkv.sql.parse_edits.cut_sequence_defaults), as sqlglot misreads them
    unknown = options - {"CYCLE"}
    if unknown:
        raise NotSupportedError(f'sequence option {", ".join(sorted(unknown))} is not supported (sequence "{name}")')
    inc = _int_option(args["increment"], "INCREMENT", env) if args.get("increment") is not None else 1
    if inc == 0:
        raise ProgrammingError(f'INCREMENT must not be zero (sequence "{name}")')
    lo = _int_option(args["minvalue"], "MINVALUE", env) if args.get("minvalue") is not None else (
        1 if inc > 0 else INT64_MIN)
    hi = _int_option(args["maxvalue"], "MAXVALUE", env) if args.get("maxvalue") is not None else (
        INT64_MAX if inc > 0 else -1)
    if lo >= hi:
        raise ProgrammingError(f'MINVALUE ({lo}) must be less than MAXVALUE ({hi}) (sequence "{name}")')
    start = _int_option(args["start"], "START", env) if args.get("start") is not None else (lo if inc > 0 else hi)
    if not lo <= start <= hi:
        raise ProgrammingError(f'START value ({start}) must be between MINVALUE ({lo}) and MAXVALUE ({hi}) '
                               f'(sequence "{name}")')
    cycle = "CYCLE" in options or bool(args.get("cycle"))
    if args.get("order"):
        raise NotSupportedError(f'sequence option ORDER is not supported (sequence "{name}")')
    return SequenceDescriptor(seq_id, name, start, inc, lo, hi, cycle)


def create_sequence(ast: exp.Create, catalog, env) -> None:
    name = new_name(ast.this, "sequence")
    if ast.args.get("replace"):
        raise NotSupportedError(f'CREATE OR REPLACE SEQUENCE is not supported ("{name}")')
    if catalog.name_taken(name):
        if ast.args.get("exists"):
            return
        raise DuplicateTable(f'relation "{name}" already exists')
    if ast.args.get("expression") is not None:
        raise NotSupportedError(f'CREATE SEQUENCE ... AS type is not supported ("{name}"); sequences are 64-bit')
    args: dict = {}
    props = ast.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if not isinstance(prop, exp.SequenceProperties):
            raise NotSupportedError(f'clause "{prop.sql()}" is not supported (sequence "{name}")')
        args.update({k: v for k, v in prop.args.items() if v is not None})
    catalog.create(sequence_options(name, args, env, catalog.allocate_id()))


def identity_sequence(table: str, column: str, constraint: exp.Expression, env, catalog) -> SequenceDescriptor:
    """The sequence of ``column GENERATED ... AS IDENTITY [(options)]`` (not yet stored)."""
    name = f"{table}_{column}_seq"
    if catalog.name_taken(name):
        raise ProgrammingError(f'relation "{name}" already exists (the sequence of identity column "{column}")')
    args = {k: v for k, v in constraint.args.items()
            if k in ("start", "increment", "minvalue", "maxvalue", "cycle", "order")}
    return sequence_options(name, args, env, catalog.allocate_id())


def drop_sequence(ast: exp.Drop, catalog) -> None:
    if ast.args.get("cascade"):
        raise NotSupportedError("DROP SEQUENCE ... CASCADE is not supported")
    for node in ast.args.get("tables") or ast.expressions:
        name = qualified_name(node)
        desc = catalog.find_sequence(name)
        if desc is None:
            if ast.args.get("exists"):
                continue
            raise UndefinedTable(f'sequence "{name}" does not exist')
        if desc.owner is not None:
            table = catalog.table_by_id(desc.owner[0])
            if table is not None:
                col = next((c.name for c in table.columns if c.id == desc.owner[1]), "?")
                raise DependentObjectsStillExist(
                    f'cannot drop sequence "{name}" because column "{col}" of table "{table.name}" requires it'
                )
        remove_sequence(catalog, desc)


def remove_sequence(catalog, desc: SequenceDescriptor) -> None:
    catalog.remove(desc)
    catalog.txn.delete(counter_key(desc.id))


def drop_owned_sequences(catalog, table_id: int, column_id: int | None = None) -> None:
    """DROP TABLE / DROP COLUMN: the identity sequences the table (or column) owns go too."""
    for desc in catalog.list_descriptors():
        owner = getattr(desc, "owner", None)
        if desc.kind == "sequence" and owner and owner[0] == table_id and column_id in (None, owner[1]):
            remove_sequence(catalog, desc)
