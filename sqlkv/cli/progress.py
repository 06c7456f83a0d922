"""Progress bars for long work, on a terminal only: ``.import``, ``.dump``, ``.backup``,
``sqlkv check``, ``sqlkv test``.

``with progress("importing x.csv") as bar: for row in bar(rows, total=n): ...`` draws
prompt-toolkit's progress bar on stderr when stderr is a terminal, so results on stdout and
output to pipes and files stay clean; anywhere else ``bar`` hands the iterable back untouched.
While the bar is up, ``sys.stdout`` is patched (prompt-toolkit's patch_stdout) so that lines
printed meanwhile appear above the bar instead of through it: print through ``sys.stdout``
as looked up inside the block. ``quiet=True`` draws nothing (say, output streams to this
very terminal).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

Wrap = Callable[..., Iterable[Any]]


def _plain(iterable: Iterable[Any], total: int | None = None, label: str = "") -> Iterable[Any]:
    return iterable


def is_terminal(stream: Any) -> bool:
    """True when ``stream`` is a terminal (False for pipes, files, closed or fake streams)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def stderr_is_terminal() -> bool:
    return is_terminal(sys.stderr)


@contextmanager
def progress(title: str, quiet: bool = False) -> Iterator[Wrap]:
    """A function that wraps an iterable in a progress bar (a no-op off a terminal)."""
    if quiet or not stderr_is_terminal():
        yield _plain
        return
    # prompt_toolkit loads only when a bar is drawn (a terminal), not for scripts and pipes
    from prompt_toolkit.output import create_output
    from prompt_toolkit.patch_stdout import patch_stdout
    from prompt_toolkit.shortcuts import ProgressBar

    with ProgressBar(title=title, output=create_output(stdout=sys.stderr)) as bar, patch_stdout(raw=True):
        yield lambda iterable, total=None, label="": bar(iterable, total=total, label=label)
