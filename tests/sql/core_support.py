"""Shared fixtures for the SQL core tests: sessions over each engine, a KV write tracer."""

from __future__ import annotations

import importlib.util
import sqlite3

import pytest

from sqlkv.catalog.catalog import Catalog
from sqlkv.encoding.keys import decode_uvarint
from sqlkv.encoding.pretty import pretty_key
from sqlkv.sql import Database, Session
from sqlkv.storage import MemoryEngine
from sqlkv.storage.kv import OP_DELETE, OP_PUT
from sqlkv.storage.recording import RecordingEngine
from sqlkv.sql.rowstore.display import describe_value, names_lookup

HAVE_LSM = importlib.util.find_spec("sqlkv.storage.lsm") is not None

ENGINES = ["memory", pytest.param("lsm", marks=pytest.mark.skipif(not HAVE_LSM, reason="LSM engine absent"))]


def open_db(kind: str, tmp_path) -> Database:
    if kind == "memory":
        return Database.open(":memory:")
    return Database.open(str(tmp_path / "db"))


def rows(session: Session, sql: str, params=()) -> list[tuple]:
    return session.execute(sql, params).fetchall()


def same_write_outcome(session: Session, conn: sqlite3.Connection, sql: str) -> bool:
    """Run a write in sqlite3 and sqlkv; both must succeed or both fail with an
    IntegrityError (a constraint). Returns whether it succeeded."""
    from sqlkv.errors import IntegrityError

    try:
        conn.execute(sql)
        lite_ok = True
    except sqlite3.IntegrityError:
        lite_ok = False
    try:
        session.execute(sql)
        ok = True
    except IntegrityError:
        ok = False
    assert ok == lite_ok, f"sqlite3 {'accepted' if lite_ok else 'refused'}, sqlkv did not: {sql}"
    return ok


def sqlite_rows(conn: sqlite3.Connection, sql: str, params=()) -> list[tuple]:
    return conn.execute(sql, params).fetchall()


class KVTrace:
    """A session on a `RecordingEngine`, rendering the batches a statement commits as text lines."""

    def __init__(self) -> None:
        self.engine = RecordingEngine(MemoryEngine())
        self.session = Session(Database(":memory:", self.engine, None))

    @property
    def batches(self) -> list[list[str]]:
        return [self._render(b) for b in self.engine.batches]

    def _render(self, batch) -> list[str]:
        # names come from a fresh read-only transaction: the batch's own txn has committed
        txn = self.session.db.txn_manager.begin(read_only=True)
        tables = {t.id: t for t in Catalog(txn).list_tables()}
        txn.rollback()
        names = names_lookup(tables)
        out = []
        for op, key, val in batch.ops:
            tid, _ = decode_uvarint(key, 0)
            if tid < 100:
                continue  # catalog writes are not part of the goldens
            if op == OP_PUT:
                out.append(f"put {pretty_key(key, names)} -> {describe_value(tables.get(tid), key, val)}")
            elif op == OP_DELETE:
                out.append(f"del {pretty_key(key, names)}")
            else:
                out.append(f"delrange {pretty_key(key, names)} - {pretty_key(val, names)}")
        conds = [f"expect-absent {pretty_key(k, names)}" for k, v in batch.conditions if v is None]
        return out + conds

    def run(self, sql: str, params=()) -> list[str]:
        """The KV operations ``sql`` commits (autocommit), one line each."""
        self.engine.batches.clear()
        self.session.execute(sql, params)
        return [line for b in self.batches for line in b]

    def close(self) -> None:
        self.session.close()
