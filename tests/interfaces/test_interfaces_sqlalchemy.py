"""The SQLAlchemy dialect: URLs, DDL, types, RETURNING, upserts, transactions, reflection.

SQLAlchemy's own compliance suite runs in test_interfaces_sqlalchemy_suite.py; these tests
cover what it does not (sqlkv's URL forms, refusals, ON CONFLICT, retries) and compare with
sqlite3 through SQLAlchemy where both databases answer the same question.
"""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed (pip install -e '.[test]')")

from sqlalchemy import (  # noqa: E402
    BigInteger, Boolean, CheckConstraint, Column, Date, DateTime, Float, ForeignKey, Identity, Index, Integer,
    LargeBinary, MetaData, Numeric, String, Table, Text, Time, UniqueConstraint, create_engine, exc, inspect,
    select, text,
)
from sqlalchemy.engine import make_url  # noqa: E402
from sqlalchemy.schema import CreateTable  # noqa: E402

from sqlkv.errors import SerializationFailure  # noqa: E402
from sqlkv.sqlalchemy import (  # noqa: E402
    connect_arguments, distinct_on, insert, is_serialization_failure, run_transaction,
)


@pytest.fixture
def engine(tmp_path: Path):
    eng = create_engine(f"sqlkv:///{tmp_path}/db")
    yield eng
    eng.dispose()


def _users(md: MetaData) -> Table:
    return Table(
        "users", md,
        Column("id", Integer, primary_key=True),
        Column("email", String(80), nullable=False, unique=True),
        Column("age", Integer, CheckConstraint("age >= 0", name="age_ok")),
        Column("score", Numeric(10, 2), server_default="0"),
    )


# -- URLs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("url, database", [
    ("sqlkv://", ":memory:"),
    ("sqlkv:///:memory:", ":memory:"),
    ("sqlkv:///shop.db", "shop.db"),
    ("sqlkv:///data/shop", "data/shop"),
    ("sqlkv:////var/db/shop", "/var/db/shop"),
])
def test_url_names_the_database(url: str, database: str) -> None:
    assert connect_arguments(make_url(url)) == (database, {})


def test_url_query_parameters_become_typed_connect_options() -> None:
    url = make_url("sqlkv:///d?durability=normal&cache_size=1048576&read_only=true&create=0&l0_trigger=8")
    assert connect_arguments(url) == ("d", {"durability": "normal", "cache_size": 1048576, "read_only": True,
                                            "create": False, "l0_trigger": 8})


@pytest.mark.parametrize("url, message", [
    ("sqlkv://host/db", "not a server"),
    ("sqlkv:///d?read_only=maybe", "must be true or false"),
    ("sqlkv:///d?cache_size=1&cache_size=2", "more than once"),
    ("sqlkv:///d?host=h:1", r"sqlkv\+etcd:// URLs only"),
])
def test_bad_urls_are_argument_errors(url: str, message: str) -> None:
    with pytest.raises(exc.ArgumentError, match=message):
        connect_arguments(make_url(url))


@pytest.mark.parametrize("query, error, message", [
    ("bogus=1", exc.InterfaceError, "unknown LSM option.*bogus"),
    ("durability=sometimes", exc.ProgrammingError, "durability must be one of"),
    ("cache_size=abc", exc.ProgrammingError, "cache_size must be a non-negative integer, not 'abc'"),
    ("memtable_size=-1", exc.ProgrammingError, "memtable_size must be a non-negative integer"),
    ("background_threads=perhaps", exc.ArgumentError, "must be true or false"),
])
def test_unknown_or_ill_typed_url_parameters_are_refused_on_connect(tmp_path: Path, query, error, message) -> None:
    with pytest.raises(error, match=message):  # ArgumentError at create_engine, the others on connect
        create_engine(f"sqlkv:///{tmp_path}/db?{query}").connect()


def test_url_parameters_reach_the_connection(tmp_path: Path) -> None:
    engine = create_engine(f"sqlkv:///{tmp_path}/db?autocommit=true&background_threads=false&cache_size=65536")
    with engine.connect() as conn:
        assert conn.connection.dbapi_connection.autocommit is True
    engine.dispose()
    with pytest.raises(exc.OperationalError, match="does not exist"):
        create_engine(f"sqlkv:///{tmp_path}/other?create=false").connect()


def test_etcd_urls_map_to_the_etcd_engine_address() -> None:
    """The mapping; tests/etcd/test_etcd_sqlalchemy.py connects to a real cluster."""
    url = make_url("sqlkv+etcd://h1:2379/shop?host=h2:2379&host=h3:2379&autocommit=true&max_txn_ops=64")
    assert connect_arguments(url) == ("etcd://h1:2379,h2:2379,h3:2379/shop?max_txn_ops=64", {"autocommit": True})
    assert connect_arguments(make_url("sqlkv+etcd://h1/shop"))[0] == "etcd://h1:2379/shop"
    # SQLAlchemy's URL parser reads "2379,h2:2379" as a port number; hosts without ports, or a URL
    # object holding the list, are the other spellings of sqlkv+etcd://h1:2379,h2:2379/shop
    assert connect_arguments(make_url("sqlkv+etcd://h1,h2:2380/shop?host=[::1]&host=h4:9"))[0] == (
        "etcd://h1:2379,h2:2380,[::1]:2379,h4:9/shop")
    listed = sa.URL.create("sqlkv+etcd", host="h1:2379,h2:2379", database="shop", query={"max_txn_ops": "8"})
    assert connect_arguments(listed) == ("etcd://h1:2379,h2:2379/shop?max_txn_ops=8", {})
    with pytest.raises(exc.ArgumentError, match="needs a host"):
        connect_arguments(make_url("sqlkv+etcd:///shop"))


def test_relative_url_is_relative_to_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    eng = create_engine("sqlkv:///rel/shop")
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE t (a INT)"))
    eng.dispose()
    assert (tmp_path / "rel" / "shop").is_dir()


def test_a_memory_engine_is_one_database_for_all_its_connections() -> None:
    eng = create_engine("sqlkv://")
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE t (a INT)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    with eng.connect() as conn:
        assert conn.execute(text("SELECT a FROM t")).all() == [(1,)]
    eng.dispose()


def test_driver_errors_arrive_as_sqlalchemy_wrappers_of_pep249_classes(engine) -> None:
    md = MetaData()
    users = _users(md)
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(users.insert(), {"email": "a@x", "age": 1})
    with pytest.raises(exc.IntegrityError, match="users_email_key"), engine.begin() as conn:
        conn.execute(users.insert(), {"email": "a@x", "age": 2})
    with pytest.raises(exc.IntegrityError, match="age_ok"), engine.begin() as conn:
        conn.execute(users.insert(), {"email": "b@x", "age": -1})
    with pytest.raises(exc.ProgrammingError, match='relation "nope" does not exist'), engine.connect() as conn:
        conn.execute(text("SELECT * FROM nope"))


# -- DDL and types --------------------------------------------------------------------------


def test_ddl_for_sqlkv_types(engine) -> None:
    md = MetaData()
    t = Table("t", md, Column("id", Integer, primary_key=True), Column("b", BigInteger), Column("s", String(10)),
              Column("x", Text), Column("n", Numeric(10, 2), server_default="1.5"), Column("f", Float),
              Column("ok", Boolean), Column("raw", LargeBinary), Column("d", Date), Column("at", DateTime),
              Column("atz", DateTime(timezone=True)))
    ddl = " ".join(str(CreateTable(t).compile(engine)).split())
    assert ddl == ("CREATE TABLE t ( id SERIAL NOT NULL, b BIGINT, s VARCHAR(10), x TEXT, n NUMERIC(10, 2) DEFAULT 1.5, "
                   "f FLOAT, ok BOOLEAN, raw BYTES, d DATE, at TIMESTAMP, atz TIMESTAMPTZ, PRIMARY KEY (id) )")
    md.create_all(engine)
    aware = datetime.datetime(2024, 5, 6, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    values = {"b": 2**62, "s": "héllo", "x": "t" * 1000, "f": 0.1, "ok": True, "raw": b"\x00\xff",
              "d": datetime.date(1999, 12, 31), "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 678901), "atz": aware}
    with engine.begin() as conn:
        pk = conn.execute(t.insert(), values).inserted_primary_key
        row = conn.execute(select(t).where(t.c.id == pk[0])).mappings().one()
    # TIMESTAMPTZ keeps the instant; it comes back in the session time zone, UTC by default
    assert dict(row) == {**values, "id": 1, "n": Decimal("1.50")}
    assert row["atz"].tzinfo is datetime.timezone.utc and row["atz"].hour == 10
    assert type(row["n"]) is Decimal and type(row["raw"]) is bytes


def test_time_uuid_and_interval_round_trip(engine) -> None:
    md = MetaData()
    t = Table("t", md, Column("id", Integer, primary_key=True), Column("tm", Time), Column("u", sa.Uuid),
              Column("us", sa.Uuid(as_uuid=False)), Column("span", sa.Interval))
    assert "tm TIME, u UUID, us UUID, span INTERVAL" in " ".join(str(CreateTable(t).compile(engine)).split())
    md.create_all(engine)
    key = uuid.UUID("12345678-1234-5678-1234-567812345678")
    values = {"id": 1, "tm": datetime.time(23, 59, 58, 123456), "u": key, "us": str(key),
              "span": datetime.timedelta(days=2, hours=-5, microseconds=3)}
    with engine.begin() as conn:
        conn.execute(t.insert(), values)
        conn.execute(text("INSERT INTO t (id, span) VALUES (2, CAST('1 month 1 second' AS INTERVAL))"))
        assert dict(conn.execute(select(t).where(t.c.id == 1)).mappings().one()) == values
        # a month reads back as 30 days (psycopg's reading of PostgreSQL's intervals)
        assert conn.scalar(select(t.c.span).where(t.c.id == 2)) == datetime.timedelta(days=30, seconds=1)
        assert conn.scalars(select(t.c.id).where(t.c.span > datetime.timedelta(days=1)).order_by(t.c.id)).all() == [
            1, 2]
        assert conn.scalar(select(t.c.id).where(t.c.u == key, t.c.tm > datetime.time(12))) == 1
    cols = {c["name"]: type(c["type"]).__name__ for c in inspect(engine).get_columns("t")}
    assert cols == {"id": "INTEGER", "tm": "TIME", "u": "UUID", "us": "UUID", "span": "INTERVAL"}


@pytest.mark.parametrize("column, message", [
    (Column("t", Time(timezone=True)), "without time zone"),
    (Column("i", Integer, Identity(start=10, cache=20)), "do not cache"),
    (Column("a", sa.ARRAY(Integer, dimensions=2)), "one dimension"),
])
def test_what_sqlkv_lacks_is_a_compile_error(engine, column, message) -> None:
    md = MetaData()
    Table("t", md, Column("k", Integer, primary_key=True), column)
    with pytest.raises(exc.CompileError, match=message):
        md.create_all(engine)
    assert inspect(engine).get_table_names() == []


def test_identity_and_computed_columns_are_created_and_reflected(engine) -> None:
    md = MetaData()
    t = Table("t", md, Column("id", Integer, Identity(always=True, start=10, increment=5, maxvalue=1000),
                              primary_key=True),
              Column("n", Integer, Identity()), Column("x", Integer),
              Column("twice", Integer, sa.Computed("x * 2", persisted=True)), Column("next", Integer,
                                                                                      sa.Computed("x + 1")))
    md.create_all(engine)
    with engine.begin() as conn:
        rows = conn.execute(t.insert().returning(t.c.id, t.c.n, t.c.twice, t.c.next), [{"x": 1}, {"x": 2}]).all()
        assert rows == [(10, 1, 2, 2), (15, 2, 4, 3)]
    with pytest.raises(exc.ProgrammingError, match="GENERATED ALWAYS"), engine.begin() as conn:
        conn.execute(t.insert().values(id=1, x=3))
    cols = {c["name"]: c for c in inspect(engine).get_columns("t")}
    assert cols["id"]["identity"] == {"always": True, "start": 10, "increment": 5, "minvalue": 1, "maxvalue": 1000,
                                      "cycle": False, "cache": 1}
    assert cols["n"]["identity"]["always"] is False and cols["n"]["identity"]["start"] == 1
    assert cols["twice"]["computed"] == {"sqltext": "x * 2", "persisted": True}
    assert cols["next"]["computed"] == {"sqltext": "x + 1", "persisted": False}
    assert "identity" not in cols["x"] and "computed" not in cols["x"]
    reflected = MetaData()
    reflected.reflect(engine)
    ddl = " ".join(str(CreateTable(reflected.tables["t"]).compile(engine)).split())
    assert ("id INTEGER GENERATED ALWAYS AS IDENTITY (START WITH 10 INCREMENT BY 5 MINVALUE 1 MAXVALUE 1000)"
            in ddl and "twice INTEGER GENERATED ALWAYS AS (x * 2) STORED" in ddl), ddl


def test_sequences_as_defaults_and_on_their_own(engine) -> None:
    md = MetaData()
    order_numbers = sa.Sequence("order_numbers", start=1000, increment=10, metadata=md)
    orders = Table("orders", md, Column("id", Integer, order_numbers, primary_key=True), Column("item", String(9)))
    md.create_all(engine)
    insp = inspect(engine)
    assert insp.get_sequence_names() == ["order_numbers"] and insp.has_sequence("order_numbers")
    assert not insp.has_sequence("orders")
    with engine.begin() as conn:
        first = conn.execute(orders.insert().values(item="a")).inserted_primary_key[0]  # nextval inline
        conn.execute(orders.insert(), [{"item": "b"}, {"item": "c"}])  # executemany: nextval fired per row
        assert conn.scalar(order_numbers) == 1030  # SELECT nextval('order_numbers')
        assert (first, conn.execute(select(orders.c.id, orders.c.item).order_by(orders.c.id)).all()) == (
            1000, [(1000, "a"), (1010, "b"), (1020, "c")])
    md.drop_all(engine)
    assert inspect(engine).get_sequence_names() == []


def test_a_plain_integer_key_is_serial(engine) -> None:
    md = MetaData()
    t = Table("t", md, Column("id", Integer, primary_key=True), Column("v", String(5)))
    assert "id SERIAL NOT NULL" in str(CreateTable(t).compile(engine))
    md.create_all(engine)
    with engine.begin() as conn:
        ids = [conn.execute(t.insert().values(v=v)).inserted_primary_key[0] for v in "ab"]
    assert ids == [1, 2]


def test_foreign_keys_are_created_enforced_and_reflected(engine) -> None:
    md = MetaData()
    Table("a", md, Column("id", Integer, primary_key=True), Column("code", String(5), unique=True))
    b = Table("b", md, Column("id", Integer, primary_key=True),
              Column("a_id", ForeignKey("a.id", ondelete="CASCADE", name="b_to_a")),
              Column("a_code", String(5)),
              sa.ForeignKeyConstraint(["a_code"], ["a.code"], onupdate="CASCADE", ondelete="SET NULL"))
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO a VALUES (1, 'x'), (2, 'y')"))
        conn.execute(b.insert(), [{"id": 10, "a_id": 1, "a_code": "y"}, {"id": 11, "a_id": 2, "a_code": "x"}])
    with pytest.raises(exc.IntegrityError, match="b_to_a") as caught, engine.begin() as conn:
        conn.execute(b.insert().values(id=12, a_id=99))
    assert caught.value.orig.sqlstate == "23503"
    with engine.begin() as conn:
        conn.execute(text("UPDATE a SET code = 'z' WHERE id = 2"))  # ON UPDATE CASCADE
        assert conn.execute(select(b).order_by(b.c.id)).all() == [(10, 1, "z"), (11, 2, "x")]
        conn.execute(text("DELETE FROM a WHERE id = 1"))  # b 10: ON DELETE CASCADE; b 11: SET NULL
        assert conn.execute(select(b).order_by(b.c.id)).all() == [(11, 2, None)]
    insp = inspect(engine)
    fks = sorted(insp.get_foreign_keys("b"), key=lambda fk: fk["constrained_columns"])
    assert fks == [
        {"name": "b_a_code_fkey", "constrained_columns": ["a_code"], "referred_schema": None, "referred_table": "a",
         "referred_columns": ["code"], "options": {"onupdate": "CASCADE", "ondelete": "SET NULL"}},
        {"name": "b_to_a", "constrained_columns": ["a_id"], "referred_schema": None, "referred_table": "a",
         "referred_columns": ["id"], "options": {"ondelete": "CASCADE"}},
    ]
    assert insp.get_foreign_keys("a") == []
    assert insp.get_indexes("b") == []  # the indexes the constraints created come back with them
    reflected = MetaData()
    reflected.reflect(engine)
    assert {fk.target_fullname for fk in reflected.tables["b"].foreign_keys} == {"a.id", "a.code"}
    md.drop_all(engine)
    assert inspect(engine).get_table_names() == []


def test_foreign_key_cycles_go_through_alter_table(engine) -> None:
    """Two tables referring to each other: SQLAlchemy adds one constraint with ALTER TABLE after
    both CREATE TABLEs, and drops it before the DROP TABLEs."""
    md = MetaData()
    Table("dept", md, Column("id", Integer, primary_key=True),
          Column("head_id", Integer, ForeignKey("emp.id", use_alter=True, name="dept_head")))
    Table("emp", md, Column("id", Integer, primary_key=True), Column("dept_id", ForeignKey("dept.id")))
    md.create_all(engine)
    assert [fk["name"] for fk in inspect(engine).get_foreign_keys("dept")] == ["dept_head"]
    with pytest.raises(exc.IntegrityError, match="dept_head"), engine.begin() as conn:
        conn.execute(text("INSERT INTO dept VALUES (1, 7)"))
    md.drop_all(engine)
    assert inspect(engine).get_table_names() == []


def test_deferrable_foreign_keys_are_refused_before_anything_is_created(engine) -> None:
    md = MetaData()
    Table("a", md, Column("id", Integer, primary_key=True))
    Table("b", md, Column("id", Integer, primary_key=True), Column("a_id", ForeignKey("a.id", deferrable=True)))
    with pytest.raises(exc.NotSupportedError, match="DEFERRABLE"):
        with engine.begin() as conn:
            md.create_all(conn)
    assert inspect(engine).get_table_names() == []


# -- RETURNING, upserts ---------------------------------------------------------------------


def test_returning_and_multi_row_insert_keep_parameter_order(engine) -> None:
    md = MetaData()
    users = _users(md)
    md.create_all(engine)
    emails = [f"u{i}@x" for i in range(50)]
    with engine.begin() as conn:
        rows = conn.execute(users.insert().returning(users.c.id, users.c.email, sort_by_parameter_order=True),
                            [{"email": e, "age": i} for i, e in enumerate(emails)]).all()
        assert [r.email for r in rows] == emails and [r.id for r in rows] == list(range(1, 51))
        updated = conn.execute(users.update().where(users.c.age >= 48).values(age=users.c.age + 1)
                               .returning(users.c.email, users.c.age)).all()
        assert sorted(updated) == [("u48@x", 49), ("u49@x", 50)]
        gone = conn.execute(users.delete().where(users.c.age < 2).returning(users.c.id)).scalars().all()
        assert sorted(gone) == [1, 2]


def test_on_conflict_do_update_and_do_nothing(engine) -> None:
    md = MetaData()
    users = _users(md)
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(users.insert(), [{"email": "a@x", "age": 1}, {"email": "b@x", "age": 2}])
        stmt = insert(users).values([{"id": 1, "email": "a@x", "age": 10}, {"id": 3, "email": "c@x", "age": 3}])
        conn.execute(stmt.on_conflict_do_update(index_elements=["id"], set_={"age": stmt.excluded.age}))
        stmt = insert(users).values(id=9, email="b@x", age=99)
        conn.execute(stmt.on_conflict_do_update(index_elements=[users.c.email],
                                                set_={"age": users.c.age + stmt.excluded.age},
                                                where=users.c.age < 50))
        conn.execute(insert(users).values(id=2, email="z@x", age=0).on_conflict_do_nothing())
        conn.execute(insert(users).values(id=7, email="c@x", age=0)
                     .on_conflict_do_nothing(constraint="users_email_key"))
        rows = conn.execute(select(users.c.id, users.c.email, users.c.age).order_by(users.c.id)).all()
    assert rows == [(1, "a@x", 10), (2, "b@x", 101), (3, "c@x", 3)]
    with pytest.raises(exc.CompileError, match="WHERE"):
        str(insert(users).values(id=1, email="q", age=1)
            .on_conflict_do_nothing(index_elements=["email"], index_where=users.c.age > 1).compile(engine))


# -- transactions ---------------------------------------------------------------------------


def test_savepoints_roll_back_only_their_part(engine) -> None:
    md = MetaData()
    users = _users(md)
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(users.insert(), {"email": "keep@x", "age": 1})
        nested = conn.begin_nested()
        conn.execute(users.insert(), {"email": "drop@x", "age": 2})
        nested.rollback()
        with conn.begin_nested():
            conn.execute(users.insert(), {"email": "also@x", "age": 3})
    with engine.connect() as conn:
        assert conn.execute(select(users.c.email).order_by(users.c.email)).scalars().all() == ["also@x", "keep@x"]


def test_multi_table_update_delete_regexps_and_distinct_on(engine) -> None:
    """UPDATE ... FROM, DELETE ... USING, regexp_match/regexp_replace and DISTINCT ON, rendered
    as PostgreSQL's dialect renders them (sqlite3 has none of the last three to compare with)."""
    md = MetaData()
    items = Table("items", md, Column("id", Integer, primary_key=True), Column("name", String(20)),
                  Column("price", Integer))
    cuts = Table("cuts", md, Column("item_id", Integer, primary_key=True), Column("pct", Integer))
    md.create_all(engine)
    data = [{"id": i, "name": name, "price": 10 * i} for i, name in enumerate(["apple", "Avocado", "beet", "bean",
                                                                               "Apricot"], start=1)]
    with engine.begin() as conn:
        conn.execute(items.insert(), data)
        conn.execute(cuts.insert(), [{"item_id": 1, "pct": 50}, {"item_id": 4, "pct": 10}, {"item_id": 9, "pct": 1}])
        update = (items.update().values(price=items.c.price * (100 - cuts.c.pct) / 100)
                  .where(items.c.id == cuts.c.item_id))
        assert "FROM cuts" in str(update.compile(engine))
        assert conn.execute(update).rowcount == 2
        delete = items.delete().where(items.c.id == cuts.c.item_id, cuts.c.pct < 20)
        assert "USING cuts" in str(delete.compile(engine))
        conn.execute(delete)
        assert conn.execute(select(items).order_by(items.c.id)).all() == [
            (1, "apple", 5), (2, "Avocado", 20), (3, "beet", 30), (5, "Apricot", 50)]
        names = select(items.c.name).order_by(items.c.id)
        assert conn.scalars(names.where(items.c.name.regexp_match("^a"))).all() == ["apple"]
        assert conn.scalars(names.where(items.c.name.regexp_match("^a", flags="i"))).all() == [
            "apple", "Avocado", "Apricot"]
        assert conn.scalars(names.where(~items.c.name.regexp_match("^[ab]"))).all() == ["Avocado", "Apricot"]
        assert conn.scalars(select(items.c.name.regexp_replace("[aeiou]", "_", flags="g")).order_by(items.c.id)
                            ).all() == ["_ppl_", "Av_c_d_", "b__t", "Apr_c_t"]
        letter = sa.func.lower(sa.func.substr(items.c.name, 1, 1))
        first = select(letter.label("letter"), items.c.name).ext(distinct_on(letter)).order_by(
            letter, items.c.price.desc())
        assert "SELECT DISTINCT ON (lower(" in str(first.compile(engine))
        assert conn.execute(first).all() == [("a", "Apricot"), ("b", "beet")]


def test_expression_indexes_are_created_and_reflected(engine) -> None:
    md = MetaData()
    t = Table("t", md, Column("id", Integer, primary_key=True), Column("email", String(50)), Column("n", Integer))
    Index("t_email_lower", sa.func.lower(t.c.email), unique=True)
    Index("t_mixed", sa.func.lower(t.c.email), t.c.n.desc())
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(t.insert().values(id=1, email="Ann@X.org"))
    with pytest.raises(exc.IntegrityError, match="t_email_lower"), engine.begin() as conn:
        conn.execute(t.insert().values(id=2, email="ann@x.ORG"))
    indexes = {i["name"]: i for i in inspect(engine).get_indexes("t")}
    assert indexes["t_email_lower"]["column_names"] == [None]
    assert indexes["t_email_lower"]["expressions"] == ["LOWER(email)"] and indexes["t_email_lower"]["unique"]
    assert indexes["t_mixed"]["expressions"] == ["LOWER(email)", "n"]
    assert indexes["t_mixed"]["column_names"] == [None, "n"] and indexes["t_mixed"]["column_sorting"] == {
        "n": ("desc",)}
    assert inspect(engine).get_unique_constraints("t") == []  # a unique expression index is no constraint


def test_isolation_level_is_serializable_and_autocommit_is_available(engine) -> None:
    with engine.connect() as conn:
        assert conn.get_isolation_level() == "SERIALIZABLE" == conn.default_isolation_level
        conn.execute(text("CREATE TABLE t (a INT)"))
        conn.commit()
    auto = engine.execution_options(isolation_level="AUTOCOMMIT")
    with auto.connect() as conn, engine.connect() as other:
        conn.execute(text("INSERT INTO t VALUES (1)"))  # committed at once: no commit() needed
        assert other.execute(text("SELECT count(*) FROM t")).scalar() == 1
    with engine.connect() as conn:  # the pool gives back a connection in transaction mode again
        assert conn.connection.dbapi_connection.autocommit is False
    with pytest.raises(exc.ArgumentError, match="READ COMMITTED"):
        with engine.execution_options(isolation_level="READ COMMITTED").connect():
            pass


def test_serialization_failures_are_recognised_and_retried(engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE acct (id INT PRIMARY KEY, bal INT)"))
        conn.execute(text("INSERT INTO acct VALUES (1, 100)"))

    def conflicting(conn):
        bal = conn.execute(text("SELECT bal FROM acct WHERE id = 1")).scalar()
        if len(attempts) == 0:  # another transaction commits a write to the row this one read
            with engine.begin() as other:
                other.execute(text("UPDATE acct SET bal = bal + 1 WHERE id = 1"))
        attempts.append(bal)
        conn.execute(text("UPDATE acct SET bal = :b WHERE id = 1"), {"b": bal + 10})

    attempts: list[int] = []
    with pytest.raises(exc.OperationalError) as failure:
        run_transaction(engine, conflicting, attempts=1)
    assert is_serialization_failure(failure.value) and isinstance(failure.value.orig, SerializationFailure)
    assert failure.value.orig.sqlstate == "40001"
    assert attempts == [100]

    attempts = []
    run_transaction(engine, conflicting)
    assert attempts == [101, 102]  # the first attempt lost to the concurrent +1 and ran again
    with engine.connect() as conn:
        assert conn.execute(text("SELECT bal FROM acct")).scalar() == 112
    assert not is_serialization_failure(exc.OperationalError("x", {}, ValueError()))


# -- reflection -----------------------------------------------------------------------------


def _reflection_schema(md: MetaData) -> None:
    users = _users(md)
    Index("users_age_desc", users.c.age.desc(), users.c.id, sqlkv_include=["score"])
    Index("users_adults", users.c.email, sqlkv_where=users.c.age >= 18)
    Table("pairs", md, Column("a", Integer, primary_key=True), Column("b", String(5), primary_key=True),
          Column("c", Integer), UniqueConstraint("c", "b", name="pairs_cb"))
    Table("nokey", md, Column("v", Text))
    sa.CreateView(select(users.c.id, users.c.email).where(users.c.age > 30), "seniors", metadata=md)


def test_inspector_reports_the_catalog(engine) -> None:
    md = MetaData()
    _reflection_schema(md)
    md.create_all(engine)
    insp = inspect(engine)
    assert insp.get_table_names() == ["nokey", "pairs", "users"]
    assert insp.get_view_names() == ["seniors"]
    assert insp.has_table("users") and insp.has_table("seniors") and not insp.has_table("nope")
    cols = {c["name"]: c for c in insp.get_columns("users")}
    assert list(cols) == ["id", "email", "age", "score"]
    assert [type(c["type"]).__name__ for c in cols.values()] == ["INTEGER", "VARCHAR", "INTEGER", "NUMERIC"]
    assert (cols["email"]["type"].length, cols["score"]["type"].precision, cols["score"]["type"].scale) == (80, 10, 2)
    assert [cols[n]["nullable"] for n in cols] == [False, False, True, True]
    assert cols["score"]["default"] == "0" and cols["id"]["autoincrement"] and not cols["age"]["autoincrement"]
    assert insp.get_pk_constraint("users") == {"constrained_columns": ["id"], "name": "users_pkey"}
    assert insp.get_pk_constraint("pairs")["constrained_columns"] == ["a", "b"]
    assert insp.get_pk_constraint("nokey") == {"constrained_columns": [], "name": None}  # the hidden rowid
    assert [c["name"] for c in insp.get_columns("nokey")] == ["v"]
    indexes = {i["name"]: i for i in insp.get_indexes("users")}
    assert indexes["users_age_desc"]["column_names"] == ["age", "id"]
    assert indexes["users_age_desc"]["column_sorting"] == {"age": ("desc",)}
    assert indexes["users_age_desc"]["dialect_options"] == {"sqlkv_include": ["score"]}
    assert indexes["users_adults"]["dialect_options"] == {"sqlkv_where": "age >= 18", "sqlkv_include": []}
    assert indexes["users_email_key"]["unique"] and indexes["users_email_key"]["duplicates_constraint"]
    assert insp.get_unique_constraints("pairs") == [{"name": "pairs_cb", "column_names": ["c", "b"]}]
    assert insp.get_check_constraints("users") == [{"name": "age_ok", "sqltext": "age >= 0"}]
    assert insp.get_foreign_keys("users") == []  # FOREIGN KEYs: test_foreign_keys_are_created_...
    assert [c["name"] for c in insp.get_columns("seniors")] == ["id", "email"]
    assert "age > 30" in insp.get_view_definition("seniors")
    assert insp.get_table_comment("users") == {"text": None}  # sqlkv stores no comments
    for method in ("get_columns", "get_pk_constraint", "get_indexes", "get_check_constraints", "get_foreign_keys",
                   "get_table_comment"):
        with pytest.raises(exc.NoSuchTableError):
            getattr(inspect(engine), method)("nope")
    with pytest.raises(NotImplementedError, match="one unnamed schema"):
        insp.get_table_names(schema="other")


def test_reflected_timestamptz_and_narrow_ints(engine) -> None:
    # information_schema says TIMESTAMPTZ / INT2 / INT4: reflected as their SQLAlchemy types
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMPTZ, s SMALLINT, i INT4)")
    cols = {c["name"]: c["type"] for c in inspect(engine).get_columns("tz")}
    assert isinstance(cols["ts"], sa.TIMESTAMP) and cols["ts"].timezone is True
    assert isinstance(cols["s"], sa.SMALLINT) and isinstance(cols["i"], sa.INTEGER)


def test_reflected_metadata_recreates_the_same_schema(tmp_path: Path) -> None:
    """reflect() one database, create_all() the result in another: both inspect the same."""
    first = create_engine(f"sqlkv:///{tmp_path}/first")
    md = MetaData()
    _reflection_schema(md)
    md.create_all(first)
    reflected = MetaData()
    reflected.reflect(first)
    assert sorted(reflected.tables) == ["nokey", "pairs", "users"]
    second = create_engine(f"sqlkv:///{tmp_path}/second")
    reflected.create_all(second)

    def described(eng):
        insp = inspect(eng)
        return {t: (insp.get_columns(t).__repr__(), insp.get_pk_constraint(t), insp.get_indexes(t),
                    insp.get_unique_constraints(t), insp.get_check_constraints(t)) for t in insp.get_table_names()}

    assert described(second) == described(first)
    first.dispose()
    second.dispose()


# -- pandas and Alembic ---------------------------------------------------------------------


def test_pandas_to_sql_and_read_sql_match_sqlite3(engine, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({
        "id": range(7), "name": ["a", "b", None, "d", "e", "f", "g"],
        "price": [1.5, 2.25, None, 4.0, 5.125, 6.0, 7.75],
        "at": pd.to_datetime(["2020-01-01 00:00:00", "2021-02-03 04:05:06", None, "2022-01-01 00:00:00",
                              "2023-05-05 05:05:05", "2024-01-01 00:00:00", "2025-12-31 23:59:59"]),
        "ok": [True, False, True, True, False, False, True],
    })
    oracle = create_engine(f"sqlite:///{tmp_path}/oracle.sqlite")
    for eng in (engine, oracle):
        assert frame.to_sql("items", eng, if_exists="replace", index=False) == 7
        assert frame.to_sql("items", eng, if_exists="append", index=False, chunksize=3, method="multi") == 7
        assert frame.head(2).to_sql("items", eng, if_exists="append", index=False, chunksize=1) == 2
    query = "SELECT * FROM items ORDER BY id, name"
    got, want = pd.read_sql(query, engine, parse_dates=["at"]), pd.read_sql(query, oracle, parse_dates=["at"])
    pd.testing.assert_frame_equal(got, want, check_dtype=False)  # sqlite3 returns booleans as 0/1
    assert len(got) == 16 and got["ok"].dtype == bool
    assert frame.to_sql("items", engine, if_exists="replace", index=False) == 7  # replace drops the appended rows
    pd.testing.assert_frame_equal(pd.read_sql_table("items", engine), frame, check_dtype=False)
    chunks = list(pd.read_sql("SELECT id FROM items ORDER BY id", engine, chunksize=3))
    assert [len(c) for c in chunks] == [3, 3, 1]
    with pytest.raises(ValueError, match="already exists"):
        frame.to_sql("items", engine, if_exists="fail")
    oracle.dispose()


def test_an_alembic_migration_runs_and_reverts(tmp_path: Path) -> None:
    pytest.importorskip("alembic")
    from alembic import command
    from alembic.config import Config

    scripts = tmp_path / "migrations"
    cfg = Config(str(tmp_path / "alembic.ini"))
    cfg.set_main_option("script_location", str(scripts))
    cfg.set_main_option("sqlalchemy.url", f"sqlkv:///{tmp_path}/db")
    command.init(cfg, str(scripts))
    (scripts / "versions" / "0001_accounts.py").write_text(
        "import sqlalchemy as sa\nfrom alembic import op\nrevision = '0001'\ndown_revision = None\n"
        "def upgrade():\n    op.create_table('accounts', sa.Column('id', sa.Integer, primary_key=True),\n"
        "                    sa.Column('name', sa.String(50), nullable=False))\n"
        "def downgrade():\n    op.drop_table('accounts')\n")
    (scripts / "versions" / "0002_email.py").write_text(
        "import sqlalchemy as sa\nfrom alembic import op\nrevision = '0002'\ndown_revision = '0001'\n"
        "def upgrade():\n    op.add_column('accounts', sa.Column('email', sa.String(120)))\n"
        "    op.create_index('ix_accounts_email', 'accounts', ['email'], unique=True)\n"
        "def downgrade():\n    op.drop_index('ix_accounts_email', table_name='accounts')\n"
        "    op.drop_column('accounts', 'email')\n")
    command.upgrade(cfg, "head")
    eng = create_engine(f"sqlkv:///{tmp_path}/db")
    insp = inspect(eng)
    assert [c["name"] for c in insp.get_columns("accounts")] == ["id", "name", "email"]
    assert [(i["name"], i["column_names"], i["unique"]) for i in insp.get_indexes("accounts")] == [
        ("ix_accounts_email", ["email"], True)]
    with eng.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == ["0002"]
    command.downgrade(cfg, "0001")
    insp = inspect(eng)
    assert [c["name"] for c in insp.get_columns("accounts")] == ["id", "name"] and insp.get_indexes("accounts") == []
    command.downgrade(cfg, "base")
    assert inspect(eng).get_table_names() == ["alembic_version"]
    eng.dispose()


def test_alembic_alters_and_drops_columns_and_refuses_comments(engine) -> None:
    """What a migration does after the first one: change a column's type, nullability, default
    and name, drop a column, add a foreign key; a comment is a clear error that leaves nothing."""
    pytest.importorskip("alembic")
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE acc (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, note TEXT, n INT)"))
        conn.execute(text("CREATE TABLE owner (id INT PRIMARY KEY)"))
        conn.execute(text("INSERT INTO owner VALUES (5)"))
        conn.execute(text("INSERT INTO acc VALUES (1, 'ann', 'hello', 5)"))
    with engine.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        op.alter_column("acc", "name", type_=String(100), existing_type=String(20), nullable=True)
        op.alter_column("acc", "note", new_column_name="remark", server_default="none")
        op.alter_column("acc", "n", new_column_name="owner_id")
        op.create_foreign_key("acc_owner", "acc", "owner", ["owner_id"], ["id"])
        op.drop_column("acc", "remark")
    insp = inspect(engine)
    cols = {c["name"]: c for c in insp.get_columns("acc")}
    assert list(cols) == ["id", "name", "owner_id"]
    assert cols["name"]["type"].length == 100 and cols["name"]["nullable"]
    assert [fk["name"] for fk in insp.get_foreign_keys("acc")] == ["acc_owner"]
    with engine.begin() as conn:
        assert conn.execute(text("SELECT * FROM acc")).all() == [(1, "ann", 5)]
        conn.execute(text("INSERT INTO acc (id) VALUES (2)"))  # name is nullable now
    with pytest.raises(exc.CompileError, match='no comments: cannot comment column "owner_id"'):
        with engine.begin() as conn:
            op = Operations(MigrationContext.configure(conn))
            op.add_column("acc", Column("extra", Integer))
            op.alter_column("acc", "owner_id", comment="who owns it")
    assert [c["name"] for c in inspect(engine).get_columns("acc")] == ["id", "name", "owner_id"]  # rolled back
    with pytest.raises(exc.DataError, match='column "name"'), engine.begin() as conn:
        Operations(MigrationContext.configure(conn)).alter_column("acc", "name", type_=Integer)


def test_alembic_autogenerate_sees_no_change_in_a_model_just_created(engine) -> None:
    pytest.importorskip("alembic")
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    md = MetaData()
    _reflection_schema(md)
    Table("more", md, Column("id", BigInteger, primary_key=True), Column("at", DateTime), Column("on", Date),
          Column("t", Time), Column("u", sa.Uuid), Column("raw", LargeBinary), Column("f", Float),
          Column("ok", Boolean), Column("users_id", ForeignKey("users.id", ondelete="CASCADE")),
          Column("twice", Integer, sa.Computed("id * 2")), Index("more_at", "at"))
    md.create_all(engine)
    md.remove(md.tables["seniors"])  # a view: autogenerate compares tables (as on PostgreSQL)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
        assert compare_metadata(context, md) == []


def test_json_columns_compile_bind_access_and_reflect(engine) -> None:
    """JSON is JSONB (issue 15): DDL, dict binding, element access with typed accessors, paths,
    JSON null vs SQL NULL, reflection."""
    md = MetaData()
    docs = Table("docs", md, Column("id", Integer, primary_key=True), Column("data", sa.JSON),
                 Column("opt", sa.JSON(none_as_null=True)))
    assert "data JSONB" in str(CreateTable(docs).compile(engine))
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(docs.insert(), [{"id": 1, "data": {"name": "ann", "n": 5, "tags": ["a", "b"]}, "opt": None},
                                     {"id": 2, "data": {"name": "bob", "n": 12, "tags": []}, "opt": {"x": 1}}])
        assert conn.scalar(select(docs.c.data).where(docs.c.id == 1)) == {"name": "ann", "n": 5, "tags": ["a", "b"]}
        assert conn.scalars(select(docs.c.id).where(docs.c.data["n"].as_integer() > 6)).all() == [2]
        assert conn.scalars(select(docs.c.data["name"].as_string()).order_by(docs.c.id)).all() == ["ann", "bob"]
        assert conn.scalar(select(docs.c.data[("tags", 1)].as_string()).where(docs.c.id == 1)) == "b"
        assert conn.scalars(select(docs.c.id).where(docs.c.opt.is_(None))).all() == [1]  # SQL NULL
        assert conn.execute(text("SELECT data -> 'tags' FROM docs WHERE id = 2")).scalar() == "[]"  # as JSON text
    reflected = {c["name"]: c["type"] for c in inspect(engine).get_columns("docs")}
    assert isinstance(reflected["data"], sa.JSON)
