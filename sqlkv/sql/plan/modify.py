"""Planning UPDATE, DELETE and TRUNCATE.

``DELETE FROM users WHERE name = 'q'`` resolves the target table, hands the WHERE conjuncts to
`plan_table_access` (the same access-path choice a SELECT gets: here no index on ``name``, so a
full primary-index scan) and wraps what the spans do not enforce in a `Filter`. The write
operator goes on top; EXPLAIN prints the tree like a query's::

    delete users
      filter name = 'q'
        scan users@users_pkey /Table/100/1 - /Table/100/2
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import NotSupportedError
from sqlkv.sql.context import Scope, table_scope
from sqlkv.sql.exec.modify import Delete, Truncate, Update
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.relational import Filter
from sqlkv.sql.exec.scan import IndexScan
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.exploded_reads import PartialFetch
from sqlkv.sql.expr import compile_predicate
from sqlkv.sql.plan.access import plan_table_access
from sqlkv.sql.plan.array_assign import element_target, is_element_target
from sqlkv.sql.plan.foreign_keys import fk_plan
from sqlkv.sql.plan.element_updates import update_reads
from sqlkv.sql.plan.dml_parts import assignments, column_defaults, returning, row_checker, target_table
from sqlkv.sql.plan.joins import FromPlanner, and_predicates
from sqlkv.sql.plan.names import LazySql, split_conjuncts
from sqlkv.sql.plan.select import QueryPlanner


def _target_rows(ast: exp.Expression, catalog, env) -> tuple:
    """(table, alias, scope, operator producing the rows an UPDATE/DELETE touches)."""
    if ast.args.get("with_") or ast.args.get("with"):
        # it was dropped, and its names then failed as unknown relations
        raise NotSupportedError("WITH before UPDATE/DELETE is not supported; use a subquery")
    if ast.args.get("order") or ast.args.get("limit"):
        raise NotSupportedError("ORDER BY / LIMIT on UPDATE and DELETE is not supported")
    if isinstance(ast, exp.Delete) and ast.args.get("tables") and ast.this:
        # MySQL's `DELETE t1, t2 FROM ...`: the list named which tables lose rows, and was dropped
        raise NotSupportedError("DELETE t1, ... FROM (MySQL's multi-table DELETE) is not supported; "
                                "use DELETE FROM t [USING ...] WHERE ...")
    table, alias = target_table(ast.this, catalog)
    others = _other_tables(ast)
    if others:
        return (table, alias, *_joined_rows(ast, others, catalog, env))
    scope = Scope(table_scope(table, alias))
    conjuncts = split_conjuncts(ast.args.get("where"))
    access = plan_table_access(table, alias, conjuncts, scope, env)
    source: Operator = access.operator
    if access.remaining:
        pred = and_predicates([compile_predicate(c, scope, env) for c in access.remaining])
        source = Filter(source, pred, LazySql(access.remaining))
    return table, alias, scope, source


def plan_update(ast: exp.Update, catalog, env) -> Update:
    table, alias, scope, source = _target_rows(ast, catalog, env)
    sets = assignments(ast.expressions, table, scope, env, column_defaults(table, env), alias)
    checker = row_checker(table, alias, env)
    # SET tags[3] = x casts the element itself (plan/array_assign.py): the array needs no re-cast
    checker.trust_arrays({table.columns.index(table.column(element_target(n.this)[0].name))
                          for n in ast.expressions if isinstance(n, exp.EQ) and is_element_target(n.this)})
    checker.trust_stored(set(range(len(table.columns))) - {p for p, _ in sets.items})
    joined = bool(_other_tables(ast))
    ret = returning(ast.args.get("returning"), table, alias, env, scope if joined else None)
    op = Update(table, source, sets, checker, ret)
    op.joined = joined
    if not joined:
        _read_assigned_elements_only(ast, table, source)
    op.fk = fk_plan(table, catalog, env)
    return op


def _read_assigned_elements_only(ast: exp.Update, table, source: Operator) -> None:
    """``SET tags[3] = x`` on an exploded ARRAY column, row found by primary key: read its length
    and the assigned elements, not the whole value (plan/element_updates.py)."""
    scan = source.child if isinstance(source, Filter) else source
    codec = codec_for(table)
    if not isinstance(scan, IndexScan) or not scan.primary or not codec.exploded or codec.virtual:
        return
    elements, unread = update_reads(ast, table)
    if elements or unread:
        needed = set(range(len(table.columns))) - unread
        scan.partial_fetch = PartialFetch(codec, needed, elements, sized=True)


def plan_delete(ast: exp.Delete, catalog, env) -> Delete:
    table, alias, scope, source = _target_rows(ast, catalog, env)
    joined = bool(_other_tables(ast))
    op = Delete(table, source, returning(ast.args.get("returning"), table, alias, env, scope if joined else None))
    op.joined = joined
    op.fk = fk_plan(table, catalog, env)
    return op


def _other_tables(ast: exp.Expression) -> list[exp.Expression]:
    """The FROM items of UPDATE ... FROM / DELETE ... USING (a table's inline joins kept)."""
    from_ = ast.args.get("from_")
    items = [from_.this, *(from_.expressions or [])] if from_ is not None else list(ast.args.get("using") or [])
    return items


def _joined_rows(ast: exp.Expression, others: list[exp.Expression], catalog, env) -> tuple[Scope, Operator]:
    """UPDATE t SET ... FROM u WHERE ...: the target joined with the other tables; each row is
    the target row followed by the others' columns. The write operators keep the first joined
    row of each target row (PostgreSQL: which one is unspecified when several match)."""
    joins: list[exp.Join] = []
    for item in others:
        inline = item.args.get("joins") if isinstance(item, exp.Table) else None
        if inline:
            item = item.copy()
            item.set("joins", None)
        joins.append(exp.Join(this=item.copy()))
        joins.extend(j.copy() for j in inline or [])
    target = ast.this.copy()
    sel = exp.Select(expressions=[exp.Star()], from_=exp.From(this=target), joins=joins)
    planner = env.subqueries if isinstance(env.subqueries, QueryPlanner) else QueryPlanner(catalog, env)
    env.subqueries = planner
    sources, specs = planner._sources(sel, None)
    fp = FromPlanner(sources, specs, None, env)
    fp.prepare(split_conjuncts(ast.args.get("where")))
    fr = fp.plan(None, None)
    return fr.scope, planner.filter(fr.operator, fr.remaining, fr.scope)


def plan_truncate(ast: exp.TruncateTable, catalog, env) -> Truncate:
    # TRUNCATE always restarts the auto-assigned key (RESTART IDENTITY); no dependents to cascade to
    if str(ast.args.get("identity") or "").upper() == "CONTINUE":
        raise NotSupportedError("TRUNCATE ... CONTINUE IDENTITY is not supported (TRUNCATE restarts row ids)")
    if str(ast.args.get("option") or "").upper() == "CASCADE":
        raise NotSupportedError("TRUNCATE ... CASCADE is not supported (sqlkv does not track dependent objects)")
    tables = [target_table(t, catalog)[0] for t in ast.expressions]
    ids = {t.id for t in tables}
    identity = any(c.identity for t in tables for c in t.columns)
    owned = [d.id for d in catalog.list_descriptors() if identity and d.kind == "sequence" and d.owner
             and d.owner[0] in ids]
    return Truncate(tables, owned)
