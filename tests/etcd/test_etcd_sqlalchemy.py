"""The SQLAlchemy dialect on an etcd database: ``sqlkv+etcd://host:port/name`` URLs."""

from __future__ import annotations

import pytest

sa = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed (pip install -e '.[test]')")

from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, inspect, select  # noqa: E402

from sqlkv.sqlalchemy import insert  # noqa: E402


def test_engines_share_an_etcd_database(etcd_url: str) -> None:
    url = "sqlkv+" + etcd_url  # etcd://127.0.0.1:PORT/NAME?max_txn_ops=N
    first, second = create_engine(url), create_engine(url)
    md = MetaData()
    items = Table("items", md, Column("id", Integer, primary_key=True), Column("name", String(20), unique=True))
    md.create_all(first)
    with first.begin() as conn:
        conn.execute(items.insert(), [{"name": "a"}, {"name": "b"}])
        stmt = insert(items).values(id=1, name="a2")
        conn.execute(stmt.on_conflict_do_update(index_elements=["id"], set_={"name": stmt.excluded.name}))
    # another engine (another client of the cluster) sees the committed rows and the schema
    with second.connect() as conn:
        assert conn.execute(select(items.c.id, items.c.name).order_by(items.c.id)).all() == [(1, "a2"), (2, "b")]
    insp = inspect(second)
    assert insp.get_table_names() == ["items"]
    assert [i["name"] for i in insp.get_indexes("items")] == ["items_name_key"]
    first.dispose()
    second.dispose()
