"""Where each request's time goes inside the dynamic batcher: its wait, the hops, the run.

With this folder on ``PYTHONPATH`` and ``MCP_REQUEST_BREAKDOWN=<file>`` in the environment, a process
with ``serve`` among its arguments (``mcp serve``) wraps three methods of
``scheduling.batcher.BatchingExecutor`` and, when the executor stops, writes one JSON line per request
a batch answered: its class, when it was queued, when its batch started on the event loop, when the
worker thread began and ended the backend's run (and that thread's CPU time for it), and when the
batch's task saw the end, all on ``time.monotonic()`` (one clock for every process of the machine).
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
    import gc
    import json
    import time

    from mcp2026ai.contract import SLAClass
    from mcp2026ai.scheduling.batcher import BatchingExecutor

    records: list[dict[str, object]] = []
    loop_events: dict[str, list[tuple[float, ...]]] = {"stalls": [], "gc": [], "sheds": []}
    gc_began = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_began[0] = time.monotonic()
        else:
            loop_events["gc"].append((info["generation"], gc_began[0], time.monotonic()))

    gc.callbacks.append(on_gc)

    async def watch_the_loop() -> None:
        while True:
            asleep = time.monotonic()
            await asyncio.sleep(0.001)
            late = time.monotonic() - asleep - 0.001
            if late > STALL_S:
                loop_events["stalls"].append((asleep, late))

    thread_times: dict[int, tuple[float, float, float]] = {}
    """id(outputs) -> (run began, run ended, thread CPU): handed from the worker to the loop."""
    task_times: dict[asyncio.Task[object] | None, tuple[float, float, float]] = {}

    start = BatchingExecutor.start
    shed = BatchingExecutor._shed_best_effort
    watchers: list[asyncio.Task[None]] = []
    timed_infer = BatchingExecutor._timed_infer
    run_backend = BatchingExecutor._run_backend
    execute = BatchingExecutor._execute
    stop = BatchingExecutor.stop

    def traced_timed_infer(self: BatchingExecutor, inputs: object, outputs: object) -> tuple[object, float]:
        began, cpu = time.monotonic(), time.thread_time()
        results, compute_s = timed_infer(self, inputs, outputs)  # type: ignore[arg-type]
        thread_times[id(results)] = (began, time.monotonic(), time.thread_time() - cpu)
        return results, compute_s

    async def traced_run_backend(self: BatchingExecutor, *args: object, **kwargs: object) -> object:
        results = await run_backend(self, *args, **kwargs)  # type: ignore[arg-type]
        times = thread_times.pop(id(results), None)
        if times is not None:
            task_times[asyncio.current_task()] = times
        return results

    async def traced_execute(self: BatchingExecutor, batch: list) -> None:  # type: ignore[type-arg]
        started = time.monotonic()
        try:
            await execute(self, batch)
        finally:
            ended = time.monotonic()
            run = task_times.pop(asyncio.current_task(), None)
            for pending in batch:
                records.append(
                    {
                        "class": pending.sla_class.value,
                        "queued": pending.enqueued_at,
                        "started": started,
                        "run": run,
                        "ended": ended,
                        "rows": len(batch),
                    }
                )

    async def traced_start(self: BatchingExecutor) -> None:
        await start(self)
        if not watchers:  # one watcher for the process's loop
            watchers.append(asyncio.get_running_loop().create_task(watch_the_loop()))

    def traced_shed(self: BatchingExecutor, still_needed: object) -> None:
        before = self._queues.depth(SLAClass.BEST_EFFORT)
        shed(self, still_needed)  # type: ignore[arg-type]
        count = before - self._queues.depth(SLAClass.BEST_EFFORT)
        if count:
            loop_events["sheds"].append((time.monotonic(), count))

    async def traced_stop(self: BatchingExecutor, drain_timeout_s: float) -> None:
        await stop(self, drain_timeout_s)
        with open(path, "a", encoding="utf-8") as out:
            out.writelines(json.dumps(record) + "\n" for record in records)
        records.clear()
        with open(path + ".loop.json", "w", encoding="utf-8") as out:
            json.dump(loop_events, out)

    BatchingExecutor._timed_infer = traced_timed_infer  # type: ignore[method-assign,assignment]
    BatchingExecutor._run_backend = traced_run_backend  # type: ignore[method-assign,assignment]
    BatchingExecutor._execute = traced_execute  # type: ignore[method-assign]
    BatchingExecutor.stop = traced_stop  # type: ignore[method-assign]
    BatchingExecutor.start = traced_start  # type: ignore[method-assign]
    BatchingExecutor._shed_best_effort = traced_shed  # type: ignore[method-assign,assignment]


if os.environ.get("MCP_REQUEST_BREAKDOWN") and "serve" in sys.argv:
    install(os.environ["MCP_REQUEST_BREAKDOWN"])
