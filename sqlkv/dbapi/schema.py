"""What the shell and the driver know about the schema: descriptors as SQL text, and dumps.

``.schema users`` reads the ``users`` `TableDescriptor` through a `Catalog` bound to a
read-only transaction and prints it back as DDL::

    CREATE TABLE users (
      id INT PRIMARY KEY,
      email VARCHAR(100) NOT NULL
    );
    CREATE UNIQUE INDEX users_email_key ON users (email);

``.dump`` uses the same text, followed by one INSERT per row (rows stream from ``SELECT *``;
`sql_literal` writes each value so that it reads back as the same value and type). Indexes are
created after the data, which makes a reload faster.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from sqlkv.catalog.sequences import create_sequence_sql
from sqlkv.catalog import Catalog
from sqlkv.catalog.sequences import counter_state
from sqlkv.sql.schema_text import column_sql, foreign_key_sql, implicit_pk, key_list, quote_ident

__all__ = ["SchemaReader", "copy_database", "create_index_sql", "create_table_sql", "create_view_sql",
           "dump_lines", "foreign_key_sql", "quote_ident", "sql_literal"]

def sql_literal(value: Any) -> str:
    """A SQL literal that evaluates back to ``value`` (same type where SQL can say it)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return f"CAST('{value!r}' AS FLOAT)"
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            # sqlkv's parser has no bytes literal yet for arbitrary bytes; X'..' is the standard one.
            return f"X'{value.hex()}'"
        return "CAST('" + text.replace("'", "''") + "' AS BYTES)"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return "'" + str(value).replace("'", "''") + "'"


class SchemaReader:
    """Descriptor reads for the shell, each in a short read-only transaction."""

    def __init__(self, session: Any) -> None:
        self.session = session

    @contextmanager
    def _catalog(self) -> Iterator[Any]:
        """A catalog reading in the session's open transaction (so it sees its own uncommitted
        DDL, e.g. the table `.import` creates), else in a read-only transaction of its own."""
        db = self.session.db
        cache = getattr(db, "descriptor_cache", None)
        if self.session.in_transaction:
            yield Catalog(self.session.txn, None)  # uncommitted descriptors bypass the shared cache
            return
        txn = db.txn_manager.begin(read_only=True)
        try:
            yield Catalog(txn, cache)
        finally:
            txn.rollback()

    def tables(self) -> list[Any]:
        """User tables (not views, not virtual tables), by name."""
        with self._catalog() as catalog:
            return sorted(
                (t for t in catalog.list_tables() if getattr(t, "virtual", None) is None),
                key=lambda t: t.name,
            )

    def views(self) -> list[Any]:
        with self._catalog() as catalog:
            return sorted(catalog.list_views(), key=lambda v: v.name)

    def sequences(self) -> list[tuple[Any, tuple[int, bool] | None]]:
        """Every sequence (identity ones included) with its counter state, by name."""
        with self._catalog() as catalog:
            seqs = [d for d in catalog.list_descriptors() if d.kind == "sequence"]
            return [(d, counter_state(catalog.txn, d)) for d in seqs]

    def find_table(self, name: str) -> Any | None:
        with self._catalog() as catalog:
            return catalog.find_table(name)

    def find_view(self, name: str) -> Any | None:
        with self._catalog() as catalog:
            return catalog.get_view(name)

    def names(self) -> dict[str, list[str]]:
        """Table and view names -> their visible column names (for completion)."""
        out = {t.name: [c.name for c in t.columns if not c.hidden] for t in self.tables()}
        for view in self.views():
            out[view.name] = list(view.column_names or [])
        return out


def create_table_sql(table: Any, sequences: dict[str, Any] | None = None, foreign_keys: bool = True,
                     names: dict[int, Any] | None = None) -> str:
    """``CREATE TABLE`` text recreating ``table``'s columns, key, checks and families (and,
    with ``foreign_keys``, its foreign keys; ``names`` maps table ids to descriptors for them).
    ``sequences`` (name -> descriptor) gives identity columns their sequence options."""
    pk = table.primary_index
    inline_pk = (
        not implicit_pk(table) and len(pk.column_ids) == 1 and not pk.descending[0]
    )
    lines = []
    for col in table.columns:
        if col.hidden:
            continue
        suffix = " PRIMARY KEY" if inline_pk and col.id == pk.column_ids[0] else ""
        lines.append("  " + column_sql(table, col, sequences, suffix))
    if not implicit_pk(table) and not inline_pk:
        lines.append(f"  PRIMARY KEY ({key_list(table, pk)})")
    for check in table.checks:
        lines.append(f"  CONSTRAINT {quote_ident(check.name)} CHECK ({check.expr_sql})")
    if foreign_keys:
        lines.extend(f"  {foreign_key_sql(table, fk, names or {})}" for fk in table.foreign_keys)
    if table.families:  # the declared families (family 0, implicit, is not among them)
        for fam in table.families:
            cols = ", ".join(quote_ident(table.column_by_id(c).name) for c in fam.column_ids)
            layout = " WITH (layout = exploded)" if fam.exploded else ""
            lines.append(f"  FAMILY {quote_ident(fam.name)} ({cols}){layout}")
    return f"CREATE TABLE {quote_ident(table.name)} (\n" + ",\n".join(lines) + "\n);"


def _reloaded_sequence_name(desc: Any, tables: dict[int, Any]) -> str:
    """The name a sequence gets when the dump is loaded: an identity column's sequence is
    created as <table>_<column>_seq under the names the table and column have now."""
    owner = desc.owner
    table = tables.get(owner[0]) if owner else None
    if table is None:
        return desc.name
    col = next((c for c in table.columns if c.id == owner[1]), None)
    return f"{table.name}_{col.name}_seq" if col is not None else desc.name


def create_index_sql(table: Any, index: Any) -> str:
    unique = "UNIQUE " if index.unique else "INVERTED " if getattr(index, "inverted", False) else ""
    text = f"CREATE {unique}INDEX {quote_ident(index.name)} ON {quote_ident(table.name)} ({key_list(table, index)})"
    if index.storing:
        stored = ", ".join(quote_ident(table.column_by_id(c).name) for c in index.storing)
        text += f" STORING ({stored})"
    if getattr(index, "predicate", None) is not None:
        text += f" WHERE {index.predicate}"
    return text + ";"


def create_view_sql(view: Any) -> str:
    cols = ""
    if view.column_names:
        cols = " (" + ", ".join(quote_ident(c) for c in view.column_names) + ")"
    return f"CREATE VIEW {quote_ident(view.name)}{cols} AS {view.query_sql};"


def dump_lines(session: Any, reader: SchemaReader, tables: Iterable[Any] | None = None) -> Iterator[str]:
    """The lines of a SQL script recreating the database (schema, rows, indexes, views).

    ``tables`` is ``reader.tables()`` unless the caller wraps it (in a progress bar).
    """
    yield "BEGIN;"
    done: list[Any] = []
    sequences = reader.sequences()
    by_name = {d.name: d for d, _state in sequences}
    for desc, _state in sequences:
        if desc.owner is None:  # identity sequences come with their column
            yield f"CREATE SEQUENCE {quote_ident(desc.name)} {create_sequence_sql(desc)};"
    for table in reader.tables() if tables is None else tables:
        done.append(table)
        # foreign keys are added after every row is in (as pg_dump does), so load order is free
        yield create_table_sql(table, by_name, foreign_keys=False)
        columns = [c for c in table.columns if not c.hidden and c.computed is None]
        names = ", ".join(quote_ident(c.name) for c in columns)
        select = f"SELECT {names} FROM {quote_ident(table.name)}"
        overriding = " OVERRIDING SYSTEM VALUE" if any(c.identity == "ALWAYS" for c in columns) else ""
        prefix = f"INSERT INTO {quote_ident(table.name)} ({names}){overriding} VALUES ("
        for row in session.execute(select):
            yield prefix + ", ".join(sql_literal(v) for v in row) + ");"
    for table in done:
        for index in table.indexes:
            yield create_index_sql(table, index)
    by_id = {t.id: t for t in done}
    for table in done:
        for fk in table.foreign_keys:
            yield f"ALTER TABLE {quote_ident(table.name)} ADD {foreign_key_sql(table, fk, by_id)};"
    for desc, state in sequences:
        if state is not None:
            name = _reloaded_sequence_name(desc, by_id)
            yield f"SELECT setval('{name}', {state[0]}, {'true' if state[1] else 'false'});"
    for view in reader.views():
        yield create_view_sql(view)
    yield "COMMIT;"


def copy_database(source: Any, target: Any, wrap_tables: Any = None) -> None:
    """Recreate ``source``'s schema and rows in ``target`` (sessions; target should be empty).

    The rows come from one snapshot: the reads run in a transaction of their own (or in the
    source's open one). The target is written in one transaction, so a failure leaves it empty.
    """
    own = not source.in_transaction
    if own:
        source.execute("BEGIN")
    try:
        reader = SchemaReader(source)
        tables = reader.tables()
        if wrap_tables is not None:
            tables = wrap_tables(tables)
        for statement in dump_lines(source, reader, tables=tables):
            target.execute(statement)
    except BaseException:
        if target.in_transaction:
            target.rollback()
        raise
    finally:
        if own:
            source.rollback()
