"""``unnest(...)`` (and ``jsonb_path_query(...)``, alone) in a select list: PostgreSQL's
set-returning call, rewritten into FROM.

``SELECT id, unnest(tags) FROM t WHERE id > 1`` becomes
``SELECT id, __srf.u1 AS "unnest(tags)" FROM t CROSS JOIN unnest(tags) AS __srf(u1) WHERE id > 1``:
the call moves into a lateral ``unnest`` FROM item (sqlkv/sql/exec/unnest.py) and the select item
reads its column. That is PostgreSQL's behaviour since version 10: each input row gives one row
per element, a NULL or empty array gives none, several ``unnest`` calls of one select list are
zipped (the shorter padded with NULLs), and WHERE runs before the expansion while DISTINCT,
ORDER BY and LIMIT run after it. Refused where the rewrite would change the meaning: with
GROUP BY, HAVING, aggregates or window functions in the same SELECT (PostgreSQL expands after
aggregating), inside another expression's arguments of an aggregate, or with several arrays
in one call.
"""

from __future__ import annotations

from sqlglot import exp

from sqlkv.errors import NotSupportedError

_ALIAS = "__sqlkv_srf"


def rewrite_select_unnest(ast: exp.Expression) -> None:
    """Move every select-list ``unnest(x)`` (and ``jsonb_path_query(...)``) of every SELECT in
    ``ast`` into its FROM clause."""
    for select in list(ast.find_all(exp.Select)):
        calls = [call for item in select.expressions for call in _own_calls(item, exp.Unnest)]
        paths = [call for item in select.expressions for call in _own_calls(item, exp.Anonymous)
                 if call.name.lower() == "jsonb_path_query"]
        if paths and (calls or len(paths) > 1):
            raise NotSupportedError("jsonb_path_query() in a select list must be its only set-returning call: "
                                    "put the others in FROM")
        if calls or paths:
            _rewrite(select, calls or paths)


def _own_calls(item: exp.Expression, kind: type) -> list:
    """The calls of one select item, not those of its subqueries."""
    out = []
    for node in item.find_all(kind):
        if node is item:
            out.append(node)
            continue
        parent = node.parent
        while parent is not None and parent is not item and not isinstance(parent, exp.Query):
            parent = parent.parent
        if parent is item or parent is None:
            out.append(node)
    return out


def _rewrite(select: exp.Select, calls: list[exp.Expression]) -> None:
    what = "unnest" if isinstance(calls[0], exp.Unnest) else "jsonb_path_query"
    if select.args.get("group") or select.args.get("having") or any(
            isinstance(n, (exp.AggFunc, exp.Window)) for item in select.expressions for n in item.find_all(
                exp.AggFunc, exp.Window)):
        raise NotSupportedError(f"{what}() in a select list with GROUP BY, HAVING, aggregates or window "
                                f"functions is not supported: {what} in FROM instead")
    if what == "jsonb_path_query":
        _move(select, calls[0], "jsonb_path_query")
        return
    names = []
    args = []
    for k, call in enumerate(calls, 1):
        if len(call.expressions) != 1:
            raise NotSupportedError("unnest() with several arrays is allowed in FROM only")
        name = f"u{k}"
        names.append(name)
        args.append(call.expressions[0].copy())
        label = call.meta.get("source_text") or "unnest"
        column = exp.column(name, table=_ALIAS)
        call.replace(exp.alias_(column, label, quoted=True) if call.parent is select else column)
    lateral = exp.Unnest(expressions=args, alias=exp.TableAlias(
        this=exp.to_identifier(_ALIAS), columns=[exp.to_identifier(n) for n in names]))
    _join(select, lateral)


def _move(select: exp.Select, call: exp.Expression, label: str) -> None:
    """One set-returning call into a lateral FROM item whose one column the select item reads."""
    source = call.copy()
    column = exp.column("s1", table=_ALIAS)
    text = call.meta.get("source_text") or label
    call.replace(exp.alias_(column, text, quoted=True) if call.parent is select else column)
    _join(select, exp.Table(this=source, alias=exp.TableAlias(this=exp.to_identifier(_ALIAS),
                                                                columns=[exp.to_identifier("s1")])))


def _join(select: exp.Select, lateral: exp.Expression) -> None:
    if select.args.get("from_") is None:
        select.set("from_", exp.From(this=lateral))
    else:
        select.append("joins", exp.Join(this=lateral))
