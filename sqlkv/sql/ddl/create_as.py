"""CREATE TABLE ... AS query (CTAS).

``CREATE TABLE top AS SELECT name, total FROM orders WHERE total > 100`` plans the query to
learn its output columns, creates ``top`` with those names and types through the ordinary
CREATE TABLE path (no primary key: rows get the hidden ``rowid``, as a table declared without
one), then runs ``INSERT INTO top <query>`` in the same transaction. A column whose type the
planner cannot tell (an aggregate, NULL) takes the type of the first row's value, TEXT when
that is NULL too (PostgreSQL's ``unknown`` becomes text). ``WITH NO DATA`` creates the table
empty. Names come from the select list, or from ``CREATE TABLE t (a, b) AS``.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from sqlkv.errors import ProgrammingError
from sqlkv.sql.types import SqlType, value_type
from sqlkv.sql.plan.select import plan_query
from sqlkv.sql.plan.insert import plan_insert
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.ddl.tables import create_table
from sqlkv.sql.ddl.names import new_name, refuse_table_properties


def create_table_as(ast: exp.Create, catalog, env) -> None:
    target = ast.this
    table_node = target.this if isinstance(target, exp.Schema) else target
    name = new_name(table_node, "table")
    with_data = _with_data(ast)
    refuse_table_properties(_without_data_property(ast), name)
    query = ast.expression
    if catalog.name_taken(name):
        if ast.args.get("exists"):
            return
        raise ProgrammingError(f'relation "{name}" already exists')
    op = plan_query(query.copy(), catalog, env)
    cols = [c for c in op.columns if not c.hidden]
    names = [c.name for c in cols]
    if isinstance(target, exp.Schema) and target.expressions:
        given = [e.name for e in target.expressions]
        if len(given) > len(cols):
            raise ProgrammingError(f"CREATE TABLE AS specifies {len(given)} column names, "
                                   f"but the query returns {len(cols)} columns")
        names = given + names[len(given):]
    seen: set[str] = set()
    for n in names:
        if n.lower() in seen:
            raise ProgrammingError(f'column "{n}" specified more than once (give the select items distinct aliases)')
        seen.add(n.lower())
    types = [c.type if c.type is not None and c.type.known else None for c in cols]
    if any(t is None for t in types):
        types = _types_from_first_row(op, env.ctx, types)
    schema = exp.Schema(this=table_node.copy(), expressions=[
        exp.ColumnDef(this=exp.to_identifier(n, quoted=True), kind=exp.DataType.build(t.sql(), udt=True))
        for n, t in zip(names, types)])
    create = exp.Create(this=schema, kind="TABLE")
    create_table(ParsedStatement("CREATE TABLE", create.sql(), ast=create), catalog, env)
    if with_data:
        insert = exp.Insert(this=table_node.copy(), expression=query.copy())
        plan_insert(insert, catalog, env).execute(env.ctx)


def _types_from_first_row(op: Any, ctx: Any, types: list[SqlType | None]) -> list[SqlType]:
    rows = op.rows(ctx)
    first = next(iter(rows), None)
    close = getattr(rows, "close", None)
    if close is not None:
        close()
    out = []
    for i, t in enumerate(types):
        if t is None:
            v = first[i] if first is not None else None
            t = value_type(v) if v is not None else SqlType("TEXT")
        out.append(t)
    return out


def _with_data(ast: exp.Create) -> bool:
    props = ast.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.WithDataProperty):
            return not prop.args.get("no")
    return True


def _without_data_property(ast: exp.Create) -> exp.Create:
    props = ast.args.get("properties")
    if props is None:
        return ast
    copy = ast.copy()
    kept = [p for p in copy.args["properties"].expressions if not isinstance(p, exp.WithDataProperty)]
    copy.set("properties", exp.Properties(expressions=kept) if kept else None)
    return copy
