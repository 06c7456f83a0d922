"""Timing and profiling of the database work inside a workload.

A workload wraps only its database calls in ``with stopwatch:`` -- generating rows and keys,
and comparing results, stay outside -- so the times compare the engines and not the harness.
When ``--profile`` names the workload, the same blocks switch a profiler on and off, so the
profile shows exactly the timed code: cProfile always, pyinstrument as well when importable.
"""

from __future__ import annotations

import cProfile
import importlib
import io
import pstats
import time
from typing import Any


class Profiler:
    """cProfile (and pyinstrument, if installed) over the stopwatch's timed blocks only."""

    def __init__(self) -> None:
        self.cprofile = cProfile.Profile()
        self.pyinstrument: Any = None
        try:
            module = importlib.import_module("pyinstrument")
        except ImportError:
            module = None
        if module is not None:
            self.pyinstrument = module.Profiler()
        self._pyinstrument_started = False
        self.ran = False  # pstats cannot read a profile that never ran

    def resume(self) -> None:
        # pyinstrument samples one session from start to stop, so it covers the first timed
        # block to the last; only cProfile is switched off in between.
        if self.pyinstrument is not None and not self._pyinstrument_started:
            self.pyinstrument.start()
            self._pyinstrument_started = True
        self.ran = True
        self.cprofile.enable()

    def pause(self) -> None:
        self.cprofile.disable()

    def finish(self) -> None:
        if self._pyinstrument_started:
            self.pyinstrument.stop()
            self._pyinstrument_started = False

    def report(self, top: int = 30) -> str:
        """The ``top`` functions by cumulative time, the 20 with the most time of their own,
        then pyinstrument's call tree if it ran."""
        if not self.ran:
            return "(nothing to show: the profiled workload did not run)"
        buffer = io.StringIO()
        stats = pstats.Stats(self.cprofile, stream=buffer)
        stats.strip_dirs().sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(20)  # where the time itself goes
        text = buffer.getvalue()
        if self.pyinstrument is not None and self.pyinstrument.last_session is not None:
            text += "\n" + self.pyinstrument.output_text(unicode=False, color=False)
        return text


CLOCKS = ("wall", "cpu")


class Stopwatch:
    """Accumulates the time spent inside its ``with`` blocks.

    ``clock="wall"`` (the default) is elapsed time, fsync waits included. ``clock="cpu"`` is
    this process's CPU time: steadier on a machine shared with other work, but blind to time
    spent waiting for the disk, so it flatters engines that fsync.
    """

    def __init__(self, profiler: Profiler | None = None, clock: str = "wall") -> None:
        self.seconds = 0.0
        self.profiler = profiler
        self._now = time.process_time if clock == "cpu" else time.perf_counter
        self._started = 0.0

    def __enter__(self) -> Stopwatch:
        if self.profiler is not None:
            self.profiler.resume()
        self._started = self._now()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.seconds += self._now() - self._started
        if self.profiler is not None:
            self.profiler.pause()
