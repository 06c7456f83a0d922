"""sqlkv through SQLAlchemy's ORM and pandas: a small library catalogue.

    pip install 'sqlkv[sqlalchemy]' pandas
    python examples/orm_pandas.py [DIRECTORY]      # default: a memory database

Declarative models with a relationship, a session, queries, an upsert, then pandas reading
the same tables (read_sql) and writing a summary back (to_sql).
"""

from __future__ import annotations

import sys
from decimal import Decimal

import pandas as pd
from sqlalchemy import ForeignKey, Numeric, String, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from sqlkv.sqlalchemy import insert


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)  # SERIAL: sqlkv assigns max(id)+1
    name: Mapped[str] = mapped_column(String(80), unique=True)
    books: Mapped[list[Book]] = relationship(back_populates="author", order_by="Book.title")


class Book(Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    price: Mapped[Decimal] = mapped_column(Numeric(8, 2))
    # FOREIGN KEY (author_id) REFERENCES authors (id): enforced by sqlkv, used by the ORM to join
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"), index=True)
    author: Mapped[Author] = relationship(back_populates="books")


def main(directory: str | None = None) -> None:
    url = f"sqlkv:///{directory}" if directory else "sqlkv://"
    engine = create_engine(url)
    Base.metadata.create_all(engine)

    with Session(engine) as session, session.begin():
        le_guin = Author(name="Ursula K. Le Guin", books=[
            Book(title="The Dispossessed", price=Decimal("9.99")),
            Book(title="A Wizard of Earthsea", price=Decimal("7.50")),
        ])
        lem = Author(name="Stanislaw Lem", books=[Book(title="Solaris", price=Decimal("8.25"))])
        session.add_all([le_guin, lem])
        session.flush()  # INSERT ... RETURNING id: the assigned keys
        lem_id = lem.id

    with Session(engine) as session:
        author = session.scalars(select(Author).where(Author.name.like("Ursula%"))).one()
        print(f"{author.name}: {', '.join(b.title for b in author.books)}")
        cheap = session.execute(
            select(Book.title, Author.name).join(Book.author).where(Book.price < 9).order_by(Book.price)
        ).all()
        print("under 9:", [f"{title} ({name})" for title, name in cheap])

    # An upsert: the price of Solaris changes; a new book is inserted.
    with engine.begin() as conn:
        solaris_id = conn.scalar(select(Book.id).where(Book.title == "Solaris"))
        stmt = insert(Book).values([
            {"id": solaris_id, "title": "Solaris", "price": Decimal("6.00"), "author_id": lem_id},
            {"id": 100, "title": "The Cyberiad", "price": Decimal("11.00"), "author_id": lem_id},
        ])
        conn.execute(stmt.on_conflict_do_update(index_elements=[Book.id], set_={"price": stmt.excluded.price}))

    books = pd.read_sql(
        select(Author.name.label("author"), Book.title, Book.price).join(Book.author).order_by(Book.title), engine
    )
    print(books.to_string(index=False))
    summary = (books.assign(price=books.price.astype(float))
               .groupby("author", as_index=False).agg(books=("title", "count"), total=("price", "sum")).round(2))
    summary.to_sql("author_summary", engine, if_exists="replace", index=False)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT author, books, total FROM author_summary ORDER BY author").all()
    print("summary:", [tuple(r) for r in rows])
    with Session(engine) as session:
        per_author = session.execute(
            select(Author.name, func.count(Book.id)).join(Author.books).group_by(Author.name).order_by(Author.name)
        ).all()
    print("books per author:", [tuple(r) for r in per_author])
    engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
