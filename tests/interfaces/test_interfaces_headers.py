"""Result column names are the user's own text, as SQLite names them (issue 13: sqlglot's
normalised `COUNT(*)`, `COALESCE(a, b)`, `GROUP_CONCAT(...)` were shown instead)."""

from __future__ import annotations

import sqlite3
import tomllib

import pytest

import sqlkv
from tests.interfaces.conftest import REPO, run_sqlkv

SELECTS = [
    "SELECT count(*), ifnull(a,b), a+1, a  +  1, upper(name), 'it''s, ok', (SELECT 1) FROM t",
    "SELECT DISTINCT lower(name), coalesce(b, 0) FROM t",
    "SELECT a, t.b, name AS n, max(a) AS m FROM t GROUP BY a, t.b, name",
    "SELECT abs(a) FROM t UNION ALL SELECT a FROM t",
    "SELECT count(*) FROM t WHERE a = ?",
]


@pytest.mark.parametrize("query", SELECTS)
def test_headers_are_the_text_typed_like_sqlite3(query: str) -> None:
    names = []
    for conn in (sqlkv.connect(), sqlite3.connect(":memory:")):
        conn.execute("CREATE TABLE t (a INT, b INT, name TEXT)")
        cur = conn.execute(query, (1,) if "?" in query else ())
        names.append([d[0] for d in cur.description])
    assert names[0] == names[1]


def test_string_agg_keeps_its_name_in_the_shell() -> None:
    result = run_sqlkv("--mode", "csv", "-c", "CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('x')",
                       "-c", "SELECT string_agg(name, ','), count(*) FROM t")
    assert result.out.splitlines()[0] == "\"string_agg(name, ',')\",count(*)", result.out


def test_readme_demo_db_is_ignored_and_license_is_an_spdx_expression() -> None:
    """demo.db from README's "Try it" is ignored; README installs speedups from a checkout;
    the license is a PEP 639 expression (setuptools warned about the table form)."""
    assert "/demo.db/" in (REPO / ".gitignore").read_text().splitlines()
    readme = (REPO / "README.md").read_text()
    assert "pip install -e '.[speedups]'" in readme and "pip install 'sqlkv[speedups]'" not in readme
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert isinstance(project["license"], str)
