"""SQLAlchemy's ARRAY type on sqlkv: DDL, lists in and out, subscripts, slices, ANY, reflection."""

from __future__ import annotations

import pytest

sa = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed (pip install -e '.[test]')")

from sqlalchemy.schema import CreateTable  # noqa: E402


@pytest.fixture
def engine():
    eng = sa.create_engine("sqlkv://")
    yield eng
    eng.dispose()


def test_array_columns_round_trip(engine):
    md = sa.MetaData()
    t = sa.Table("t", md, sa.Column("id", sa.Integer, primary_key=True), sa.Column("tags", sa.ARRAY(sa.Text)),
                 sa.Column("n", sa.ARRAY(sa.Integer)))
    assert "tags TEXT[]" in str(CreateTable(t).compile(engine)) and "n INTEGER[]" in str(CreateTable(t).compile(engine))
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": 1, "tags": ["a", None], "n": [3, 1, 2]}, {"id": 2, "tags": [], "n": None}])
        assert conn.execute(sa.select(t).order_by(t.c.id)).all() == [(1, ["a", None], [3, 1, 2]), (2, [], None)]
        assert conn.execute(sa.select(t.c.n[1], t.c.n[2:3]).where(t.c.id == 1)).all() == [(3, [1, 2])]
        assert conn.scalars(sa.select(t.c.id).where(sa.literal(2) == sa.any_(t.c.n))).all() == [1]
    reflected = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns("t")}
    assert isinstance(reflected["tags"], sa.ARRAY) and isinstance(reflected["tags"].item_type, sa.TEXT)
    assert isinstance(reflected["n"].item_type, sa.INTEGER)


def test_two_dimensional_arrays_are_a_compile_error(engine):
    t = sa.Table("m", sa.MetaData(), sa.Column("a", sa.ARRAY(sa.Integer, dimensions=2)))
    with pytest.raises(sa.exc.CompileError, match="one dimension"):
        str(CreateTable(t).compile(engine))
