"""The ORM as a web application uses it: a users/posts/comments model with relationships,
eager loading, pagination, bulk inserts, constraint violations and write conflicts.

Query results are compared with the same model on sqlite3 (the oracle); the failures are
compared with the PEP 249 classes and SQLSTATEs sqlkv documents.
"""

from __future__ import annotations

from pathlib import Path

import pytest

sa = pytest.importorskip("sqlalchemy", reason="the sqlalchemy extra is not installed (pip install -e '.[test]')")

from sqlalchemy import ForeignKey, String, Text, create_engine, exc, func, insert, select, text  # noqa: E402
from sqlalchemy.orm import (  # noqa: E402
    DeclarativeBase, Mapped, joinedload, mapped_column, relationship, selectinload, sessionmaker,
)

from sqlkv.sqlalchemy import is_serialization_failure, run_transaction  # noqa: E402


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(120), unique=True)
    posts: Mapped[list[Post]] = relationship(back_populates="author", cascade="all, delete-orphan",
                                             order_by="Post.id")


class Post(Base):
    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    author_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    author: Mapped[User] = relationship(back_populates="posts")
    comments: Mapped[list[Comment]] = relationship(back_populates="post", cascade="all, delete-orphan",
                                                   passive_deletes=True, order_by="Comment.id")


class Comment(Base):
    __tablename__ = "comments"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str] = mapped_column(Text)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="CASCADE"))
    post: Mapped[Post] = relationship(back_populates="comments")


def _populate(session_factory) -> None:
    with session_factory.begin() as session:
        for u in range(4):
            session.add(User(email=f"u{u}@example.org", posts=[
                Post(title=f"post {u}.{p}", comments=[Comment(body=f"comment {u}.{p}.{c}") for c in range(p)])
                for p in range(3)
            ]))


@pytest.fixture
def apps(tmp_path: Path):
    """The same model on sqlkv and on sqlite3, populated the same way."""
    engines = [create_engine(f"sqlkv:///{tmp_path}/app"), create_engine(f"sqlite:///{tmp_path}/oracle.sqlite")]
    factories = []
    for engine in engines:
        Base.metadata.create_all(engine)
        factories.append(sessionmaker(engine, expire_on_commit=False))
        _populate(factories[-1])
    yield factories
    for engine in engines:
        engine.dispose()


def _both(apps, read):
    results = []
    for factory in apps:
        with factory() as session:
            results.append(read(session))
    assert results[0] == results[1]
    return results[0]


def test_eager_loading_and_pagination_match_sqlite3(apps) -> None:
    def selectin(session):
        users = session.scalars(select(User).options(selectinload(User.posts).selectinload(Post.comments))
                                .order_by(User.id)).all()
        return [(u.email, [(p.title, [c.body for c in p.comments]) for p in u.posts]) for u in users]

    def joined(session):
        users = session.scalars(select(User).options(joinedload(User.posts)).order_by(User.id)).unique().all()
        return [(u.id, [p.title for p in u.posts]) for u in users]

    def page(session, number: int, size: int = 5):
        posts = session.scalars(select(Post).options(joinedload(Post.author)).order_by(Post.title.desc())
                                .limit(size).offset(number * size)).all()
        return [(p.title, p.author.email) for p in posts]

    def counts(session):
        return session.execute(select(User.email, func.count(Comment.id)).join(User.posts).outerjoin(Post.comments)
                               .group_by(User.email).order_by(User.email)).all()

    loaded = _both(apps, selectin)
    assert len(loaded) == 4 and loaded[1][1][2] == ("post 1.2", ["comment 1.2.0", "comment 1.2.1"])
    assert _both(apps, joined) == [(u + 1, [f"post {u}.{p}" for p in range(3)]) for u in range(4)]
    pages = [_both(apps, lambda s, n=n: page(s, n)) for n in range(3)]
    assert [len(p) for p in pages] == [5, 5, 2] and pages[0][0] == ("post 3.2", "u3@example.org")
    assert _both(apps, counts) == [(f"u{u}@example.org", 3) for u in range(4)]


def test_bulk_inserts_orm_and_core(apps) -> None:
    def bulk(session):
        session.execute(insert(Post), [{"title": f"bulk {i}", "author_id": 1 + i % 4} for i in range(300)])
        session.add_all([Comment(body=f"orm {i}", post_id=1) for i in range(150)])
        session.flush()
        ids = session.scalars(insert(Post).returning(Post.id), [{"title": f"ret {i}", "author_id": 2}
                                                                for i in range(20)]).all()
        return ids == sorted(ids) and len(set(ids)) == 20

    for factory in apps:
        with factory.begin() as session:
            assert bulk(session)
    _both(apps, lambda s: s.execute(select(Post.author_id, func.count()).group_by(Post.author_id)
                                    .order_by(Post.author_id)).all())
    assert _both(apps, lambda s: s.scalar(select(func.count()).select_from(Comment))) == 4 * 3 + 150


def test_unique_and_foreign_key_violations_roll_back_the_session(apps) -> None:
    factory = apps[0]
    with pytest.raises(exc.IntegrityError) as caught, factory.begin() as session:
        session.add(Post(title="kept?", author_id=1))
        session.add(User(email="u1@example.org"))
    assert caught.value.orig.sqlstate == "23505" and "users_email_key" in str(caught.value.orig)
    with pytest.raises(exc.IntegrityError) as caught, factory.begin() as session:
        session.add(Post(title="orphan", author_id=99))
    assert caught.value.orig.sqlstate == "23503" and "posts_author_id_fkey" in str(caught.value.orig)
    with factory() as session:  # nothing of the failed transactions stayed
        assert session.scalar(select(func.count()).select_from(Post)) == 12
        assert session.scalar(select(func.count()).where(Post.title.in_(["kept?", "orphan"]))) == 0
    with factory.begin() as session:  # ON DELETE CASCADE removes the comments the ORM did not load
        session.delete(session.get(User, 2))
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Comment)) == 9


def test_two_engines_on_one_database_conflict_and_retry(tmp_path: Path) -> None:
    """Two engines (as two workers would have) on the same directory: the second COMMIT of two
    transactions that read and wrote the same rows fails with SQLSTATE 40001, nothing of it
    stays, and run_transaction succeeds by running the work again."""
    first, second = create_engine(f"sqlkv:///{tmp_path}/db"), create_engine(f"sqlkv:///{tmp_path}/db")
    Base.metadata.create_all(first)
    _populate(sessionmaker(first))
    a, b = first.connect(), second.connect()
    a.begin()
    b.begin()
    count = "SELECT count(*) FROM posts WHERE author_id = 1"
    assert a.scalar(text(count)) == b.scalar(text(count)) == 3
    a.execute(insert(Post).values(title="from a", author_id=1))
    b.execute(insert(Post).values(title="from b", author_id=1))
    a.commit()
    with pytest.raises(exc.OperationalError) as caught:
        b.commit()
    assert is_serialization_failure(caught.value) and caught.value.orig.sqlstate == "40001"
    b.rollback()
    assert b.scalar(text("SELECT title FROM posts WHERE author_id = 1 ORDER BY id DESC LIMIT 1")) == "from a"
    b.rollback()
    attempts = []

    def work(session):
        attempts.append(1)
        n = session.scalar(select(func.count()).select_from(Post))
        if len(attempts) == 1:  # another worker commits between this read and our commit
            with first.begin() as other:
                other.execute(insert(Post).values(title="interloper", author_id=2))
        session.add(Post(title=f"post number {n + 1}", author_id=3))
        return n

    assert run_transaction(sessionmaker(second), work) == 14 and len(attempts) == 2
    with second.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM posts WHERE title = 'post number 15'")) == 1
    a.close()
    b.close()
    first.dispose()
    second.dispose()


def test_a_second_writing_process_is_refused_clearly_and_a_reader_gets_in(tmp_path: Path) -> None:
    """One process writes a directory database (the LOCK file); an engine in another process
    fails to connect with OperationalError naming the lock, and ?read_only=true reads."""
    import subprocess
    import sys

    engine = create_engine(f"sqlkv:///{tmp_path}/db")
    Base.metadata.create_all(engine)
    _populate(sessionmaker(engine))
    with engine.connect():
        other = subprocess.run([sys.executable, "-c", f"""
import sqlalchemy as sa
try:
    sa.create_engine("sqlkv:///{tmp_path}/db").connect()
except sa.exc.OperationalError as e:
    print(type(e.orig).__name__, e.orig)
with sa.create_engine("sqlkv:///{tmp_path}/db?read_only=true").connect() as conn:
    print(conn.exec_driver_sql("SELECT count(*) FROM posts").scalar())
"""], capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    refused, count = other.stdout.splitlines()
    assert refused.startswith("DatabaseLockedError") and "locked by another process" in refused
    assert count == "12"
    engine.dispose()
