"""A session's transaction state machine: autocommit, BEGIN/COMMIT/ROLLBACK, savepoints.

States: *idle* (no transaction), *implicit* (a transaction the session opened for one
statement, or for all statements until COMMIT when autocommit is off), *explicit* (after
BEGIN, or SAVEPOINT outside one). ``session.execute("UPDATE ...")`` in autocommit mode goes
idle -> implicit (`ensure`) -> one statement under a savepoint (`run_statement`) -> idle
(`commit`); an autocommit SELECT keeps its read transaction until its rows are consumed
(`autocommit_read`). Each statement runs under its own savepoint, so a failing statement
undoes exactly its own writes and the transaction stays usable; user SAVEPOINTs are a stack
of named transaction savepoints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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

    def run_statement(self, stmt: ParsedStatement, txn, run: Callable[[], Any]) -> Any:
        """Run under a savepoint: a failure undoes exactly this statement's writes."""
        self.last_txn = txn  # for statement_stats (stmtstats.track_statement)
        token = txn.savepoint()
        try:
            result = run()
        except ConditionFailedError as e:
            txn.rollback_to(token)
            txn.release(token)
            raise unique_violation(e) from None
        except Error:
            txn.rollback_to(token)
            txn.release(token)
            raise
        except Exception as e:  # noqa: BLE001 - turned into a PEP 249 error naming the statement
            if txn.active:
                txn.rollback_to(token)
                txn.release(token)
            raise as_pep249(e, stmt.sql, f"in {stmt.sql[:200]!r}") from e
        txn.release(token)
        return result

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
