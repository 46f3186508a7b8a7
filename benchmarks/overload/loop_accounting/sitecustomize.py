"""Where a server's event loop spends its CPU: each callback it runs, timed on the thread's own clock.

With this folder on ``PYTHONPATH`` and ``MCP_LOOP_ACCOUNTING=<file>`` in the environment, an
``mcp serve`` process wraps asyncio's ``Handle._run`` (every callback and task step, keyed by the
callback's or coroutine's name), ``_run_once`` (the whole loop) and the selector's ``select``, and
appends the running totals (nanoseconds of thread CPU, calls) to ``<file>`` as one JSON line every
half second, stamped with ``time.monotonic()`` (one clock for every process of the machine).
``loop_accounting.py`` turns two stamps into per-second figures; ``overload.py --loop-accounting``
does it for its offered window. The wrapping costs about a microsecond a callback.
"""

from __future__ import annotations

import os
import sys

SNAPSHOT_EVERY_S = 0.5


def install(path: str) -> None:
    import asyncio.base_events
    import asyncio.events
    import json
    import selectors
    import time
    from collections import defaultdict

    clock = time.thread_time_ns
    totals: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    written = [time.monotonic()]

    def add(key: str, started: int) -> None:
        entry = totals[key]
        entry[0] += clock() - started
        entry[1] += 1

    def name_of(handle: asyncio.events.Handle) -> str:
        callback = handle._callback  # type: ignore[attr-defined]
        owner = getattr(callback, "__self__", None)
        if owner is not None and hasattr(owner, "get_coro"):  # a task's step: name its coroutine
            return "task " + getattr(owner.get_coro(), "__qualname__", "?")
        return getattr(callback, "__qualname__", type(callback).__name__)

    run_handle = asyncio.events.Handle._run

    def timed_run(self: asyncio.events.Handle) -> None:
        started = clock()
        try:
            run_handle(self)
        finally:
            add(name_of(self), started)

    run_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]

    def timed_run_once(self: asyncio.base_events.BaseEventLoop) -> None:
        started = clock()
        try:
            run_once(self)
        finally:
            add("(loop in all)", started)
            now = time.monotonic()
            if now - written[0] >= SNAPSHOT_EVERY_S:
                written[0] = now
                with open(path, "a") as out:
                    out.write(json.dumps({"at": now, "totals": totals}) + "\n")

    select = selectors.EpollSelector.select

    def timed_select(self: selectors.EpollSelector, timeout: float | None = None) -> list:  # type: ignore[type-arg]
        started = clock()
        try:
            return select(self, timeout)
        finally:
            add("(select)", started)

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
    asyncio.base_events.BaseEventLoop._run_once = timed_run_once  # type: ignore[attr-defined]
    selectors.EpollSelector.select = timed_select  # type: ignore[method-assign, assignment]


if os.environ.get("MCP_LOOP_ACCOUNTING") and "serve" in sys.argv:
    install(os.environ["MCP_LOOP_ACCOUNTING"])
