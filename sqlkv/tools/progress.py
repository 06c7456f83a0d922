"""Progress bars for long work, on a terminal only: ``.import``, ``.dump``, ``.backup``,
``sqlkv check``, ``sqlkv test``.

``with progress("importing x.csv") as bar: for row in bar(rows, total=n): ...`` draws
prompt-toolkit's progress bar on stderr when stderr is a terminal, so results on stdout and
output to pipes and files stay clean; anywhere else ``bar`` hands the iterable back untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

Wrap = Callable[..., Iterable[Any]]


def _plain(iterable: Iterable[Any], total: int | None = None, label: str = "") -> Iterable[Any]:
    return iterable


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(title: str) -> Iterator[Wrap]:
    """A function that wraps an iterable in a progress bar (a no-op off a terminal)."""
    if not stderr_is_terminal():
        yield _plain
        return
    from prompt_toolkit.output import create_output
    from prompt_toolkit.shortcuts import ProgressBar

    with ProgressBar(title=title, output=create_output(stdout=sys.stderr)) as bar:
        yield lambda iterable, total=None, label="": bar(iterable, total=total, label=label)
