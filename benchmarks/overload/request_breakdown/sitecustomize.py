"""Where each request's time goes inside the dynamic batcher: its wait, the hops, the run.

With this folder on ``PYTHONPATH`` and ``MCP_REQUEST_BREAKDOWN=<file>`` in the environment, a process
with ``serve`` among its arguments (``mcp serve``) observes every batch through the scheduler's public
telemetry (``scheduling.telemetry.observe_batches`` / ``observe_sheds``) and, when it exits, writes one
JSON line per request a batch ran: its class, when it was queued, when its batch started on the event
loop, when the worker thread began and ended the backend's run (and that thread's CPU time for it), and
when the batch's task saw the end, all on ``time.monotonic()`` (one clock for every process of the machine).
``overload.py --request-breakdown`` prints the quantiles of each part. Nothing is recorded for
batches run inline on the event loop (tiny models), which have no hop.

Beside it, in ``<file>.loop.json``: the event loop's stalls (a task that sleeps a millisecond at a time
records each wake-up later than ``STALL_S``), every garbage collection (generation, start, end) and
every shed of queued best-effort requests (when, how many): what holds the loop up for everyone.
"""

from __future__ import annotations

import os
import sys

STALL_S = 0.002
"""Wake-ups of the loop watcher later than this are recorded as stalls."""


def install(path: str) -> None:
    import asyncio
    import atexit
    import gc
    import json
    import time

    from mcp2026ai.scheduling.telemetry import BatchTimes, observe_batches, observe_sheds

    records: list[dict[str, object]] = []
    loop_events: dict[str, list[tuple[float, ...]]] = {"stalls": [], "gc": [], "sheds": []}
    gc_began = [0.0]
    watchers: list[asyncio.Task[None]] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_began[0] = time.monotonic()
        else:
            loop_events["gc"].append((info["generation"], gc_began[0], time.monotonic()))

    async def watch_the_loop() -> None:
        while True:
            asleep = time.monotonic()
            await asyncio.sleep(0.001)
            late = time.monotonic() - asleep - 0.001
            if late > STALL_S:
                loop_events["stalls"].append((asleep, late))

    def on_batch(batch: BatchTimes) -> None:
        if not watchers:  # one watcher for the process's loop, from its first batch on
            watchers.append(asyncio.get_running_loop().create_task(watch_the_loop()))
        run = batch.run
        times = None if run is None or run.inline else (run.began, run.ended, run.cpu_s)
        for sla_class, queued in batch.requests:
            records.append(
                {
                    "class": sla_class.value,
                    "queued": queued,
                    "started": batch.started,
                    "run": times,
                    "ended": batch.ended,
                    "rows": len(batch.requests),
                }
            )

    def on_shed(at: float, count: int) -> None:
        loop_events["sheds"].append((at, count))

    def write() -> None:
        with open(path, "a", encoding="utf-8") as out:
            out.writelines(json.dumps(record) + "\n" for record in records)
        with open(path + ".loop.json", "w", encoding="utf-8") as out:
            json.dump(loop_events, out)

    gc.callbacks.append(on_gc)
    observe_batches(on_batch)
    observe_sheds(on_shed)
    atexit.register(write)


if os.environ.get("MCP_REQUEST_BREAKDOWN") and "serve" in sys.argv:
    install(os.environ["MCP_REQUEST_BREAKDOWN"])
