"""A session's transaction state machine: autocommit, BEGIN/COMMIT/ROLLBACK, savepoints.

States: *idle* (no transaction), *implicit* (a transaction the session opened for one
statement, or for all statements until COMMIT when autocommit is off), *explicit* (after
BEGIN, or SAVEPOINT outside one). ``session.execute("UPDATE ...")`` in autocommit mode goes
idle -> implicit (`ensure`) -> one statement (`begin_statement`) -> idle (`commit`, or
`rollback` when it fails); an autocommit SELECT keeps its read transaction until its rows are
consumed (`autocommit_read`). In a transaction that outlives the statement, each statement
runs under its own savepoint, so a failing statement undoes exactly its own writes and the
transaction stays usable; user SAVEPOINTs are a stack of named transaction savepoints.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlkv.catalog.catalog import Catalog
from sqlkv.errors import ConditionFailedError, Error, ProgrammingError
from sqlkv.sql.parse import ParsedStatement
from sqlkv.sql.pep249 import as_pep249, unique_violation
from sqlkv.sql.virtual import virtual_table

TXN_CONTROL = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "ROLLBACK TO"})


class TxnState:
    """The transaction a session's statements run in, and its savepoints."""

    def __init__(self, db, autocommit: bool) -> None:
        self.db = db
        self.autocommit = autocommit
        self.txn = None
        self.explicit = False  # BEGIN was executed
        self.autocommit_read = None  # the read txn of a pending autocommit SELECT
        self.last_txn = None  # the transaction the last statement ran in (statement_stats)
        self._catalog: Catalog | None = None
        self._savepoints: list[tuple[str, int]] = []

    @property
    def in_transaction(self) -> bool:
        """True inside BEGIN or an autocommit=False transaction (not for an autocommit SELECT
        whose read transaction only lives until its rows are consumed)."""
        if self.txn is None or not self.txn.active:
            return False
        return self.txn is not self.autocommit_read

    @property
    def owns_statement(self) -> bool:
        """Whether the next statement gets a transaction of its own (autocommit, idle)."""
        return self.autocommit and not self.explicit and not self.in_transaction

    def ensure(self, read_only: bool):
        """The open transaction, or a new one."""
        if self.txn is not None and self.txn.active:
            return self.txn
        self.txn = self.db.txn_manager.begin(read_only=read_only)
        self._catalog = None
        self._savepoints = []
        return self.txn

    def catalog(self) -> Catalog:
        """The catalog bound to the current transaction (opens one if needed)."""
        txn = self.ensure(read_only=False)
        if self._catalog is None or self._catalog.txn is not txn:
            # a read of the past reads the descriptors of then: the shared cache holds today's
            cache = None if txn.as_of is not None else self.db.descriptors
            self._catalog = Catalog(txn, cache, virtual_tables=virtual_table)
        return self._catalog

    def use_past(self, txn, explicit: bool) -> None:
        """Run in ``txn``, a read-only transaction AS OF SYSTEM TIME: for one statement, or until
        COMMIT/ROLLBACK after ``BEGIN AS OF SYSTEM TIME`` (``explicit``)."""
        if self.explicit or self.in_transaction:
            txn.rollback()
            raise ProgrammingError(
                "AS OF SYSTEM TIME cannot be used inside a transaction that has already begun: "
                "COMMIT or ROLLBACK first, or start one with BEGIN AS OF SYSTEM TIME")
        self.rollback()
        self.txn = txn
        self.explicit = explicit

    @property
    def current_catalog(self) -> Catalog | None:
        """The catalog of the current transaction if one was made (never opens one)."""
        return self._catalog

    def commit(self) -> None:
        txn, self.txn = self.txn, None
        self._catalog = None
        self._savepoints = []
        if txn is not None and txn.active:
            txn.commit()  # a failed COMMIT has rolled the transaction back

    def rollback(self) -> None:
        txn, self.txn = self.txn, None
        self._catalog = None
        self._savepoints = []
        if txn is not None and txn.active:
            txn.rollback()

    def end_read_when_done(self, txn) -> Callable[[], None]:
        """For an autocommit SELECT: commit its read transaction once the rows are consumed."""
        self.autocommit_read = txn

        def done() -> None:
            if self.autocommit_read is txn:
                self.autocommit_read = None
            if self.txn is txn:
                self.commit()

        return done

    def begin_statement(self, txn, savepoint: bool = True) -> int | None:
        """A savepoint for one statement: `undo_statement` rolls back to it when the statement
        fails, `end_statement` releases it when it succeeds. None without ``savepoint`` (the
        statement's own autocommit transaction: a failure rolls all of it back)."""
        self.last_txn = txn  # for statement_stats (stmtstats.StatementTracker)
        return txn.savepoint() if savepoint else None

    def end_statement(self, txn, token: int | None) -> None:
        if token is not None:
            txn.release(token)

    def undo_statement(self, stmt: ParsedStatement, txn, token: int | None, exc: Exception) -> Exception:
        """Undo exactly the failed statement's writes (back to savepoint ``token``; with None the
        caller rolls the statement's own transaction back); return the PEP 249 error to raise for
        ``exc`` (the session raises it, so the statement itself never runs below this module)."""
        if token is not None and (isinstance(exc, Error) or txn.active):
            txn.rollback_to(token)
            txn.release(token)
        if isinstance(exc, ConditionFailedError):
            return _chained(unique_violation(exc), None)
        if isinstance(exc, Error):
            return exc
        return _chained(as_pep249(exc, stmt.sql, f"in {stmt.sql[:200]!r}"), exc)

    # -- transaction control statements ----------------------------------------------------

    def control(self, stmt: ParsedStatement, commit: Callable[[], None], rollback: Callable[[], None]) -> None:
        """BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, ROLLBACK TO. ``commit``/``rollback``
        are the session's (they also finish a pending result)."""
        kind = stmt.kind
        if kind == "BEGIN":
            if self.explicit:
                raise ProgrammingError("there is already a transaction in progress")
            self.ensure(read_only=False)
            self.explicit = True
        elif kind == "COMMIT":
            commit()
        elif kind == "ROLLBACK":
            rollback()
        elif kind == "SAVEPOINT":
            txn = self.ensure(read_only=False)
            if not self.explicit and self.autocommit:
                self.explicit = True  # SAVEPOINT outside BEGIN starts a transaction (like SQLite)
            self._savepoints.append((stmt.savepoint or "", txn.savepoint()))
        elif kind in ("RELEASE", "ROLLBACK TO"):
            i = self._find_savepoint(stmt.savepoint or "")
            name, token = self._savepoints[i]
            if kind == "RELEASE":
                self.txn.release(token)
                del self._savepoints[i:]
            else:
                self.txn.rollback_to(token)
                del self._savepoints[i + 1 :]

    def _find_savepoint(self, name: str) -> int:
        if self.txn is None or not self.txn.active:
            raise ProgrammingError(f'savepoint "{name}" does not exist (no transaction in progress)')
        for i in range(len(self._savepoints) - 1, -1, -1):
            if self._savepoints[i][0].lower() == name.lower():
                return i
        raise ProgrammingError(f'savepoint "{name}" does not exist')


def _chained(err: Exception, cause: BaseException | None) -> Exception:
    """``err`` as ``raise err from cause`` would leave it (``from None`` when cause is None)."""
    err.__cause__ = cause
    err.__suppress_context__ = True
    return err
