"""Progress bars for long work, on a terminal only: ``.import``, ``.dump``, ``.backup``,
``sqlkv check``, ``sqlkv test``, ``sqlkv bench``, and CREATE INDEX backfills in the shell.

``with progress("importing x.csv") as bar: for row in bar(rows, total=n): ...`` draws
prompt-toolkit's progress bar on stderr when stderr is a terminal, so results on stdout and
output to pipes and files stay clean; anywhere else ``bar`` hands the iterable back untouched.
While the bar is up, ``sys.stdout`` is patched (prompt-toolkit's patch_stdout) so that lines
printed meanwhile appear above the bar instead of through it: print through ``sys.stdout``
as looked up inside the block. ``quiet=True`` draws nothing (say, output streams to this
very terminal).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
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
def progress(title: str, quiet: bool = False, known_total: bool = True) -> Iterator[Wrap]:
    """A function that wraps an iterable in a progress bar (a no-op off a terminal).

    ``known_total=False``: the work has no known size (a table scan), so instead of a bar
    stuck at 0% with no ETA it shows a spinner, the count and the time taken so far.
    """
    if quiet or not stderr_is_terminal():
        yield _plain
        return
    # prompt_toolkit loads only when a bar is drawn (a terminal), not for scripts and pipes
    from prompt_toolkit.output import create_output
    from prompt_toolkit.patch_stdout import patch_stdout
    from prompt_toolkit.shortcuts import ProgressBar
    from prompt_toolkit.shortcuts.progress_bar import formatters as f

    shown = None if known_total else [f.Label(suffix=" "), f.SpinningWheel(), f.Text(" "), _count_formatter(),
                                      f.Text("  elapsed "), f.TimeElapsed()]
    output = create_output(stdout=sys.stderr)
    with ExitStack() as stack:
        keys = None  # stdin on the terminal: the bar's own Ctrl-C binding interrupts the work
        if not is_terminal(sys.stdin):
            # a script piped in (`sqlkv db < x.sql`) or /dev/null: the bar must neither read the
            # script nor stop at its end, so it listens to an empty pipe; the terminal's
            # cursor-position replies would land in the shell after we exit, so none are asked for
            from prompt_toolkit.input import create_pipe_input

            keys, output.enable_cpr = stack.enter_context(create_pipe_input()), False
        bar = stack.enter_context(ProgressBar(title=title, formatters=shown, output=output, input=keys))
        stack.enter_context(patch_stdout(raw=True))
        yield lambda iterable, total=None, label="": bar(iterable, total=total, label=label)


def _count_formatter() -> Any:
    """A prompt-toolkit formatter showing how many items went by (``91,276``), for bars
    without a total (prompt-toolkit's own Progress formatter shows ``91276/``)."""
    from prompt_toolkit.layout.dimension import D
    from prompt_toolkit.shortcuts.progress_bar.formatters import Formatter

    class Count(Formatter):
        def format(self, progress_bar: Any, progress: Any, width: int) -> Any:
            return [("class:current", f"{progress.items_completed:,}")]

        def get_width(self, progress_bar: Any) -> Any:
            widest = max((c.items_completed for c in progress_bar.counters), default=0)
            return D.exact(len(f"{widest:,}"))

    return Count()


# Rows a statement handles before its bar appears: small tables finish without one flashing by.
# SQLKV_PROGRESS_AFTER changes it (the terminal tests use small tables).
BAR_AFTER_ITEMS = 20_000


def _bar_after_items() -> int:
    try:
        return max(0, int(os.environ.get("SQLKV_PROGRESS_AFTER", BAR_AFTER_ITEMS)))
    except ValueError:
        return BAR_AFTER_ITEMS


@contextmanager
def progress_after(title: str, threshold: int | None = None) -> Iterator[Wrap]:
    """Like `progress`, but the bar only appears once ``threshold`` items went by.

    This is the hook the shell and ``sqlkv check`` hand to the SQL layer
    (``Session.progress``): CREATE INDEX's backfill and CHECK DATABASE wrap their row loops in it.
    """
    if not stderr_is_terminal():
        yield _plain
        return
    threshold = _bar_after_items() if threshold is None else threshold
    with ExitStack() as bars:
        def wrap(iterable: Iterable[Any], total: int | None = None, label: str = "") -> Iterator[Any]:
            items = iter(iterable)
            seen = 0
            for item in items:
                yield item
                seen += 1
                if seen >= threshold:
                    break
            else:
                return
            bar = bars.enter_context(progress(title, known_total=total is not None))
            counter = bar(items, total=total, label=label)
            counter.items_completed = seen  # the bar counts the items already handled too
            yield from counter

        yield wrap


@contextmanager
def ticker(title: str, label: str = "") -> Iterator[Callable[[], None]]:
    """For work that is not one loop (``sqlkv bench kv``'s phases): ``tick()`` after each step
    moves a spinner-and-count bar on a terminal; elsewhere ``tick`` does nothing."""
    with progress(title, known_total=False) as bar:
        counter = bar(None, label=label)
        yield (lambda: None) if counter is None else counter.item_completed
