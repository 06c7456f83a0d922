"""Closing connections that were dropped without ``close()``.

A `Connection` left for the garbage collector must still give back its transaction, its share
of the database and, for the last one on a path, the LOCK file. When plain reference counting
drops it (``conn = None`` in the application), ``__del__`` closes it on the spot. When the
*cyclic* collector drops it, ``__del__`` runs wherever that collection happened to start: in
the middle of sqlkv code that may hold the very locks ``close()`` needs (it was seen inside
``Database.open``, holding the database registry lock, and the process hung for good). Such
connections are handed to one daemon reaper thread, which closes them as soon as those locks
are free; whatever is still queued at interpreter exit is closed by an ``atexit`` hook.
"""

from __future__ import annotations

import atexit
import gc
import queue
import threading
from typing import Any


class _CollectingFlag(threading.local):
    """True on a thread while the cyclic garbage collector runs there."""

    active = False


gc_running = _CollectingFlag()


def _track_collections(phase: str, info: dict) -> None:
    gc_running.active = phase == "start"


gc.callbacks.append(_track_collections)


class Reaper:
    """A queue of abandoned connections and the daemon thread that closes them."""

    def __init__(self) -> None:
        # SimpleQueue.put is safe to call from __del__ (it takes no Python-level lock)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def start(self) -> None:
        """Start the thread (from connect(), never from a finalizer)."""
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="sqlkv-reaper", daemon=True)
                self._thread.start()

    def hand_over(self, connection: Any) -> None:
        self._queue.put(connection)

    def _run(self) -> None:
        while True:
            _close_quietly(self._queue.get())

    def drain(self) -> None:
        """Close what is still queued (at interpreter exit)."""
        while True:
            try:
                connection = self._queue.get_nowait()
            except queue.Empty:
                return
            _close_quietly(connection)


def _close_quietly(connection: Any) -> None:
    try:
        connection._close_abandoned()
    except Exception:  # noqa: BLE001 - an abandoned connection has nobody to tell
        pass


abandoned_connections = Reaper()
atexit.register(abandoned_connections.drain)
