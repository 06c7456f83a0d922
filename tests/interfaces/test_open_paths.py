"""Opening a path: only a sqlkv database, or a new/empty directory when creating is meant.

Before, any existing directory became a database (LOCK, WAL and MANIFEST added beside the
user's files) and ``sqlkv check EMPTYDIR`` created a database and printed ok. A refused open
must leave the directory exactly as it was: no LOCK file, nothing else.
"""

from __future__ import annotations

import os

import pytest

import sqlkv
import sqlkv.dbapi as dbapi
from sqlkv.errors import OperationalError
from tests.interfaces.conftest import run_sqlkv


def _listing(path) -> list[str]:
    return sorted(os.listdir(path))


@pytest.fixture
def user_dir(tmp_path):
    d = tmp_path / "photos"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    return d


@pytest.mark.parametrize("kwargs", [{}, {"read_only": True}, {"create": False}])
def test_a_directory_with_other_files_is_refused_untouched(user_dir, kwargs):
    with pytest.raises(OperationalError, match="is not a sqlkv database.*notes.txt"):
        dbapi.connect(str(user_dir), **kwargs)
    assert _listing(user_dir) == ["notes.txt"]


def test_a_plain_file_is_refused(tmp_path):
    f = tmp_path / "data.csv"
    f.write_text("a,b\n")
    with pytest.raises(OperationalError, match="not a sqlkv database"):
        dbapi.connect(str(f))
    assert f.read_text() == "a,b\n"


@pytest.mark.parametrize("kwargs", [{"read_only": True}, {"create": False}])
def test_no_create_refuses_empty_and_missing_paths(tmp_path, kwargs):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OperationalError, match="not a sqlkv database"):
        dbapi.connect(str(empty), **kwargs)
    assert _listing(empty) == []
    with pytest.raises(OperationalError, match="does not exist"):
        dbapi.connect(str(tmp_path / "missing"), **kwargs)
    assert not (tmp_path / "missing").exists()


def test_new_and_empty_directories_become_databases_and_reopen(tmp_path):
    for path in (tmp_path / "new", tmp_path / "empty"):
        if path.name == "empty":
            path.mkdir()
        conn = dbapi.connect(str(path))
        conn.cursor().execute("CREATE TABLE t (a INT)")
        conn.cursor().execute("INSERT INTO t VALUES (7)")
        conn.commit()
        conn.close()
        assert "MANIFEST" in _listing(path)
        for kwargs in ({"create": False}, {"read_only": True}, {}):
            conn = dbapi.connect(str(path), **kwargs)
            cur = conn.cursor()
            cur.execute("SELECT a FROM t")
            assert cur.fetchall() == [(7,)]
            conn.close()


def test_a_database_with_a_stray_file_beside_it_still_opens(tmp_path):
    conn = dbapi.connect(str(tmp_path / "db"))
    conn.close()
    (tmp_path / "db" / "README").write_text("notes")
    dbapi.connect(str(tmp_path / "db"), read_only=True).close()


def test_check_never_creates(tmp_path, user_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    for path, listing in ((empty, []), (user_dir, ["notes.txt"])):
        result = run_sqlkv("check", str(path))
        assert result.status == 1
        assert "not a sqlkv database" in result.err
        assert "ok" not in result.out
        assert _listing(path) == listing
    db = tmp_path / "db"
    dbapi.connect(str(db)).close()
    result = run_sqlkv("check", str(db))
    assert result.status == 0, result.err
    assert result.out.strip().endswith("ok")


@pytest.mark.parametrize("option, value", [("cache_size", -1), ("cache_size", "big"), ("cache_size", True),
                                           ("memtable_size", 0), ("block_size", -512), ("l0_trigger", 0.5)])
def test_bad_storage_options_are_refused_by_name_before_anything_is_created(tmp_path, option, value):
    """cache_size='big' was a TypeError from inside the block cache; negative sizes were taken."""
    path = tmp_path / "db"
    with pytest.raises(sqlkv.ProgrammingError, match=option):
        sqlkv.connect(str(path), **{option: value})
    assert not path.exists()
