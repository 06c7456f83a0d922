"""Shared helpers for the query tests: the same statements on sqlkv and on sqlite3 (the oracle)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from sqlkv.sql import Database, Session


def norm(v: Any) -> Any:
    """Values as both engines can agree on them: bools as ints, floats rounded."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        return round(v, 6)
    return v


def norm_rows(rows: Iterable[tuple], ordered: bool) -> list[tuple]:
    out = [tuple(norm(v) for v in row) for row in rows]
    if not ordered:
        out.sort(key=lambda r: tuple((v is None, type(v).__name__, v if v is not None else 0) for v in r))
    return out


def top_level_order(sql: str) -> bool:
    """True when the statement's outermost query has an ORDER BY (its row order is defined)."""
    import sqlglot
    return sqlglot.parse_one(sql).args.get("order") is not None


class Pair:
    """A sqlkv session and a sqlite3 connection fed the same statements."""

    def __init__(self) -> None:
        self.db = Database.open(":memory:")
        self.session = Session(self.db, autocommit=True)
        self.lite = sqlite3.connect(":memory:")

    def both(self, sql: str, params: tuple = ()) -> None:
        self.session.execute(sql, params)
        self.lite.execute(sql, params)

    def many(self, sql: str, rows: list[tuple]) -> None:
        self.session.executemany(sql, rows)
        self.lite.executemany(sql, rows)

    def ours(self, sql: str, params: tuple = ()) -> list[tuple]:
        return list(self.session.execute(sql, params))

    def check(self, sql: str, params: tuple = (), ordered: bool | None = None) -> list[tuple]:
        """Runs ``sql`` on both engines and asserts equal results (as multisets unless ordered)."""
        if ordered is None:
            ordered = top_level_order(sql)
        got = norm_rows(self.ours(sql, params), ordered)
        want = norm_rows(self.lite.execute(sql, params).fetchall(), ordered)
        assert got == want, f"{sql}\n ours:   {got[:20]}\n sqlite: {want[:20]}"
        return got

    def columns(self, sql: str) -> list[str]:
        return [c.name for c in self.session.execute(sql).columns]

    def close(self) -> None:
        self.session.close()
        self.db.close()
        self.lite.close()
