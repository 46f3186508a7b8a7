"""The end of a server process: it exits even when user code never returns.

A Python model's ``execute`` (or a Python step) runs on a worker thread of the process. If it never
returns, the drain times out and the server stops, but the interpreter then waits at exit for every
non-daemon thread (``concurrent.futures`` joins its workers), and the process would hang until
killed. Like tritonserver when its exit timeout expires ("Exit timeout expired. Exiting
immediately."), a watchdog armed when the server has stopped gives the exit :func:`exit_grace_s`;
past that it names the threads still running and ends the process with status 1. A normal exit
(idle pools end at once) never meets it: the watchdog is a daemon thread and ends with the process.

Only process entry points arm it (``mcp serve`` and its worker processes): never a server running
inside another program, whose threads are its own.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

log = logging.getLogger(__name__)

STUCK_EXIT_STATUS = 1
"""Exit status of a process that left threads running user code behind (tritonserver's too)."""
MIN_EXIT_GRACE_S = 5.0


def exit_grace_s(drain_timeout_s: float) -> float:
    """How long the exit may take once the server has stopped: the drain timeout, at least 5 s."""
    return max(drain_timeout_s, MIN_EXIT_GRACE_S)


def busy_threads() -> list[threading.Thread]:
    """Threads the interpreter waits for at exit: alive, not daemons, not the main thread."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and t.is_alive() and not t.daemon]


def arm_exit_watchdog(grace_s: float) -> threading.Thread:
    """Start the daemon thread that ends the process ``grace_s`` from now if it is still running."""
    watchdog = threading.Thread(target=_end_after, args=(grace_s,), name="mcp-exit-watchdog", daemon=True)
    watchdog.start()
    return watchdog


def _end_after(grace_s: float) -> None:
    time.sleep(grace_s)
    names = ", ".join(sorted(thread.name for thread in busy_threads())) or "none"
    log.error(
        "shutdown: the process has not exited %.0f s after the server stopped; threads still running: %s "
        "(e.g. a Python model's execute that never returns): exiting without them",
        grace_s,
        names,
    )
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(STUCK_EXIT_STATUS)
