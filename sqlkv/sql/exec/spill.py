"""Rows spilled to disk by the operators with a memory bound (sort, hash join, index backfill).

Every spill is an anonymous temporary file (`tempfile.TemporaryFile`: unlinked as it is
created), holding lists of items pickled one after another. Nothing is left on disk after the
statement, however it ends: a closed or collected file is gone, and so is every file of a
process killed with kill -9, which named files in a temporary directory would leave behind.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from sqlkv.errors import OperationalError


def new_spill_file(what: str) -> IO[bytes]:
    """An anonymous temporary file for ``what`` (named in the error when the disk refuses)."""
    try:
        return tempfile.TemporaryFile(prefix="sqlkv-spill-")
    except OSError as exc:
        raise OperationalError(f"{what} could not spill to {tempfile.gettempdir()}: {exc}") from exc


def dump_chunk(file: IO[bytes], items: list, what: str) -> None:
    """Append one list of items to a spill file."""
    try:
        pickle.dump(items, file, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError as exc:
        raise OperationalError(f"{what} could not spill to {tempfile.gettempdir()}: {exc}") from exc


def spill_run(items: list, chunk: int, what: str) -> IO[bytes]:
    """``items`` written to a new spill file in lists of ``chunk`` (a sorted run, say)."""
    file = new_spill_file(what)
    try:
        for start in range(0, len(items), chunk):
            dump_chunk(file, items[start:start + chunk], what)
    except BaseException:
        file.close()
        raise
    return file


def read_chunks(file: IO[bytes]) -> Iterator[Any]:
    """The items of every list in ``file``, from its start; the file is closed (and so gone)
    when they are all read or the reader is dropped."""
    for chunk in read_lists(file):
        yield from chunk


def read_lists(file: IO[bytes]) -> Iterator[list]:
    """The lists in ``file``, as `dump_chunk` wrote them (closed as `read_chunks` closes it)."""
    try:
        file.flush()
        file.seek(0)
        while True:
            try:
                yield pickle.load(file)
            except EOFError:
                return
    finally:
        file.close()
