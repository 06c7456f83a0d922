"""Is a directory a sqlkv database? Decided before the LOCK file is taken.

Opening used to turn any existing directory into a database: ``LOCK``, a WAL segment and a
MANIFEST were added beside whatever the user kept there, and ``sqlkv check EMPTYDIR`` created
a database and said ok. `probe_directory` runs first and writes nothing, so a refused open
leaves the directory as it was (no LOCK file).

A database directory holds a ``MANIFEST`` or a WAL segment/table file (``000001.log``,
``000007.sst``: a creation that crashed before its first MANIFEST). A missing path or an empty
directory (a stray ``LOCK``/``MANIFEST.tmp`` counts as empty) becomes a new database only when
the caller means to create one; a directory with other files is never adopted.
"""

from __future__ import annotations

import os

from sqlkv.errors import OperationalError

_MARKERS = ("MANIFEST",)
_LEFTOVERS = ("LOCK", "MANIFEST.tmp")


def _is_engine_file(name: str) -> bool:
    stem, _, ext = name.partition(".")
    return stem.isdigit() and ext in ("log", "sst")


def probe_directory(path: str, create: bool) -> None:
    """Raise OperationalError unless ``path`` is a database, or may become one (``create``)."""
    if not os.path.exists(path):
        if not create:
            raise OperationalError(f"database {path} does not exist")
        return
    if not os.path.isdir(path):
        raise OperationalError(f"{path} is not a sqlkv database: a database is a directory")
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise OperationalError(f"cannot open database directory {path}: {exc.strerror or exc}") from None
    if any(n in _MARKERS or _is_engine_file(n) for n in names):
        return
    foreign = sorted(n for n in names if n not in _LEFTOVERS)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise OperationalError(
            f"{path} is not a sqlkv database: the directory holds other files ({shown}); "
            "use a new or empty directory to create one"
        )
    if not create:
        raise OperationalError(f"{path} is not a sqlkv database (an empty directory)")
