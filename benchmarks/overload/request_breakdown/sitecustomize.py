"""Where each request's time goes inside the dynamic batcher: its wait, the hops, the run.

With this folder on ``PYTHONPATH`` and ``MCP_REQUEST_BREAKDOWN=<file>`` in the environment, a process
with ``serve`` among its arguments (``mcp serve``) wraps three methods of
``scheduling.batcher.BatchingExecutor`` and, when the executor stops, writes one JSON line per request
a batch answered: its class, when it was queued, when its batch started on the event loop, when the
worker thread began and ended the backend's run (and that thread's CPU time for it), and when the
batch's task saw the end, all on ``time.monotonic()`` (one clock for every process of the machine).
``overload.py --request-breakdown`` prints the quantiles of each part. Nothing is recorded for
batches run inline on the event loop (tiny models), which have no hop.
"""

from __future__ import annotations

import os
import sys


def install(path: str) -> None:
    import asyncio
    import json
    import time

    from mcp2026ai.scheduling.batcher import BatchingExecutor

    records: list[dict[str, object]] = []
    thread_times: dict[int, tuple[float, float, float]] = {}
    """id(outputs) -> (run began, run ended, thread CPU): handed from the worker to the loop."""
    task_times: dict[asyncio.Task[object] | None, tuple[float, float, float]] = {}

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

    async def traced_stop(self: BatchingExecutor, drain_timeout_s: float) -> None:
        await stop(self, drain_timeout_s)
        with open(path, "a", encoding="utf-8") as out:
            out.writelines(json.dumps(record) + "\n" for record in records)
        records.clear()

    BatchingExecutor._timed_infer = traced_timed_infer  # type: ignore[method-assign,assignment]
    BatchingExecutor._run_backend = traced_run_backend  # type: ignore[method-assign,assignment]
    BatchingExecutor._execute = traced_execute  # type: ignore[method-assign]
    BatchingExecutor.stop = traced_stop  # type: ignore[method-assign]


if os.environ.get("MCP_REQUEST_BREAKDOWN") and "serve" in sys.argv:
    install(os.environ["MCP_REQUEST_BREAKDOWN"])
