"""One statement's plan: a tree of operators, a write operator at the root for DML.

``plan_statement`` is what the session calls on a plan-cache miss. A SELECT becomes its query
operator tree (`plan_query`); INSERT/UPSERT, UPDATE, DELETE and TRUNCATE become a
`WriteOperator` over the operators that read their input. Either way the result is an
`Operator`, which is all EXPLAIN needs to print it.
"""

from __future__ import annotations

from sqlkv.errors import NotSupportedError
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.plan.insert import plan_insert
from sqlkv.sql.plan.names import plain_query_facts
from sqlkv.sql.plan.modify import plan_delete, plan_truncate, plan_update
from sqlkv.sql.plan.select import plan_query
from sqlkv.sql.plan.simple import plan_simple
from sqlkv.sql.parse_tree import copy_tree
from sqlkv.sql.show import check_shown

PLANNED_KINDS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE"})


def plan_statement(stmt: ParsedStatement, catalog, env) -> Operator:
    """The plan of a SELECT or DML statement, compiled against ``env`` (see `CompileEnv`)."""
    # the parsed tree is shared by every plan of its text: a copy, unless planning leaves it as is
    ast = stmt.ast if stmt.shared_tree else copy_tree(stmt.ast)
    kind = stmt.kind
    if kind == "SELECT":
        if stmt.shows is not None:  # SHOW COLUMNS FROM t ...: t must exist
            check_shown(catalog, *stmt.shows)
        # a shared tree's facts come from the parse's list of its nodes: no walk of the tree
        facts = plain_query_facts(stmt.nodes) if stmt.nodes is not None else None
        if facts is not None and stmt.shows is None:  # a simple one-table SELECT: the planner's lane
            simple = plan_simple(ast, stmt.nodes, facts, catalog, env)
            if simple is not None:
                return simple
        return plan_query(ast, catalog, env, facts=facts)
    if kind == "INSERT":
        return plan_insert(ast, catalog, env, upsert=stmt.upsert, overriding=stmt.overriding)
    if kind == "UPDATE":
        return plan_update(ast, catalog, env)
    if kind == "DELETE":
        return plan_delete(ast, catalog, env)
    if kind == "TRUNCATE":
        return plan_truncate(ast, catalog, env)
    raise NotSupportedError(f"unsupported statement: {kind}")
