"""Paging long results on a terminal, as psql and mysql do: ``.pager on|off``.

A query's output is written to a temporary file first (never held in memory). If it fits on
the screen it is copied to the terminal; if it is taller, ``$PAGER`` (default ``less -FRSX``:
quit if one screen, keep colours, no line wrap, leave the text on screen) shows it. The
pager is only ever used when stdout is a terminal: output to a pipe or file is never paged.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from sqlkv.cli.progress import is_terminal

DEFAULT_PAGER = "less -FRSX"


def pager_command() -> list[str] | None:
    """The pager to run (``$PAGER``, else less if installed); None when there is none."""
    text = os.environ.get("PAGER", "").strip()
    if text:
        return shlex.split(text)
    return shlex.split(DEFAULT_PAGER) if shutil.which("less") else None


@contextmanager
def paged(out: TextIO) -> Iterator[TextIO]:
    """A stream to write one result to; on exit it reaches ``out`` directly or through the pager."""
    if not is_terminal(out):
        yield out
        return
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        yield spool
        spool.flush()
        spool.seek(0)
        lines = sum(1 for _ in spool)
        spool.seek(0)
        size = shutil.get_terminal_size()
        command = pager_command()
        if command is None or lines < size.lines - 1:
            shutil.copyfileobj(spool, out)
            return
        out.flush()
        try:
            subprocess.run(command, stdin=spool, check=False)
        except OSError:  # the pager vanished: print instead of losing the result
            spool.seek(0)
            shutil.copyfileobj(spool, out)
