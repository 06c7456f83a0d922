"""README's layout table and grammar-notes' index name the tree as it is."""

from __future__ import annotations

import re
from tests.interfaces.conftest import REPO

_PATHLIKE = re.compile(r"^[\w./*-]+$")
_PREFIXES = ("", "sqlkv/", "sqlkv/sql/", "examples/")


def _table_rows(text: str, heading: str) -> list[str]:
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append(line)
    return rows


def _named_paths(rows: list[str]) -> list[str]:
    out = []
    for row in rows:
        for token in re.findall(r"`([^`]+)`", row):
            if _PATHLIKE.match(token) and ("/" in token or re.search(r"\.(py|md|sql)$", token)):
                out.append(token)
    return out


def _exists(token: str) -> bool:
    return any(list(REPO.glob(prefix + token.rstrip("/"))) for prefix in _PREFIXES)


def test_readme_layout_names_only_real_paths_and_every_package():
    rows = _table_rows((REPO / "README.md").read_text(), "## Layout")
    named = _named_paths(rows)
    assert len(named) > 20
    assert [p for p in named if not _exists(p)] == []
    # every package of sqlkv and every sub-package of the SQL layer has a row
    dirs = [d.relative_to(REPO) for d in (REPO / "sqlkv").rglob("*") if (d / "__init__.py").exists()]
    packages = sorted(str(d) for d in dirs if len(d.parts) == 2 or (len(d.parts) == 3 and d.parts[1] == "sql"))
    assert "sqlkv/sql/rowstore" in packages
    table = "\n".join(rows)
    assert [p for p in packages if f"`{p}`" not in table] == []


def test_grammar_notes_index_names_only_real_paths_and_every_note():
    text = (REPO / "grammar-notes" / "README.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| [")]
    named = _named_paths(rows)
    assert len(named) > 20
    assert [p for p in named if not _exists(p)] == []
    notes = {p.name for p in (REPO / "grammar-notes").glob("*.md")} - {"README.md"}
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", text))
    assert linked == notes
