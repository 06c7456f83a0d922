"""Opening and closing the CLI's sessions: the shell's database, ``.open``, ``.backup``, ``sqlkv stats``."""

from __future__ import annotations

import sys
from typing import Any


def open_session_with(path: str, **options: Any) -> Any:
    """An autocommit `Session` on ``path`` opened with engine ``options`` (``.open``, ``.backup``)."""
    # imported here, not at the top: `sqlkv --help`, `sqlkv bench` and `sqlkv test` start
    # without loading the SQL layer and sqlglot (~0.8 s); a session needs them anyway
    from sqlkv.sql import Database, Session

    if not options.get("read_only", True):
        options.pop("read_only")
    return _with_progress(Session(Database.open(path, **options), autocommit=True))


def _with_progress(session: Any) -> Any:
    """Long loops of the session's statements (CREATE INDEX backfill, CHECK DATABASE) draw a
    progress bar on stderr when it is a terminal."""
    from sqlkv.cli.progress import progress_after

    session.progress = progress_after
    return session


def close_session(session: Any, err: Any = None) -> None:
    """Close a CLI session; a transaction the user left open is rolled back, and said so."""
    err = err or sys.stderr
    session.close_with_database(lambda: err.write("warning: the open transaction was rolled back (no COMMIT)\n"))
