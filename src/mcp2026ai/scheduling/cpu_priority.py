"""The worker threads batches run on, and their CPU priority: latency-critical work first on shared cores.

The batcher's queues already put latency-critical requests first; once two batches run at once, the
operating system decides which gets the CPU, and on a machine whose cores are shared (the clients, the
event loop, other processes) a batch's run is preempted whatever it holds. So a batch holding a
latency-critical request runs on a thread of normal priority, and while latency-critical requests are
being served (one was in a batch within :data:`URGENT_HOLD_S`, in any model's executor of the server:
they share one :class:`UrgentWindow`) every other batch runs on a thread whose
nice value is raised by ``bulk_nice`` (host tuning, off by default; 10 in its latency preset: such a
thread gets about a tenth of a normal one's share of a core both want). Without latency-critical
traffic every batch runs at normal priority, as before.

Under the co-located overload (benchmarks/overload/overload.py: 8,000 connections, three clients on the
server's two cores) the latency-critical client p99 was lower in 7 of 10 interleaved pairs, 51.1
against 53.8 ms at the median, goodput unchanged (0.81 against 0.82 x capacity; docs/notebook/benchmarks.md,
"Bulk batches at a lower CPU priority"). The latency-critical batch's own run is no shorter: its thread
waits for the event loop and the clients, not for the bulk batch.

Linux only, where a thread has a nice value of its own (``setpriority`` on its thread id); elsewhere
every batch runs on the normal threads. Raising a nice value needs no privilege, and the bulk threads
are created at theirs and never lowered back (which would).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from mcp2026ai.clock import Clock
from mcp2026ai.runtime.thread_priority import THREAD_PRIORITIES, lower_thread_priority

__all__ = ["BULK_NICE", "THREAD_PRIORITIES", "URGENT_HOLD_S", "BatchThreads", "UrgentWindow", "lower_thread_priority"]

BULK_NICE = 10
"""How much higher the nice value of the threads running batches without latency-critical requests is."""
URGENT_HOLD_S = 1.0
"""After a batch with a latency-critical request, other batches run at the lower priority this long."""


class UrgentWindow:
    """When a batch holding a latency-critical request last started, on the executors' clock. Each
    executor has its own unless given one: a server shares one among all its models' executors
    (app.py), so a best-effort model's batches run lower while *another* model serves latency-critical
    requests (the memory budget's mixed workload, docs/model-lifecycle.md)."""

    def __init__(self) -> None:
        self.at = -float("inf")


class BatchThreads:
    """The pools of worker threads one executor's batches run on: ``workers`` threads at normal
    priority and, with ``bulk_nice`` on Linux, as many at that much lower priority."""

    def __init__(self, workers: int, bulk_nice: int | None, clock: Clock, window: UrgentWindow | None = None) -> None:
        self._clock = clock
        self._window = window if window is not None else UrgentWindow()
        self._normal = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mcp-batch")
        self._bulk: ThreadPoolExecutor | None = None
        if bulk_nice and THREAD_PRIORITIES:
            self._bulk = ThreadPoolExecutor(
                max_workers=workers,
                thread_name_prefix="mcp-batch-bulk",
                initializer=lower_thread_priority,
                initargs=(bulk_nice,),
            )

    def for_batch(self, urgent: bool) -> ThreadPoolExecutor:
        """The pool to run the next batch on; ``urgent``: it holds a latency-critical request."""
        now = self._clock()
        if urgent:
            self._window.at = now
            return self._normal
        if self._bulk is not None and now - self._window.at <= URGENT_HOLD_S:
            return self._bulk
        return self._normal

    def shutdown(self) -> None:
        """Stop the threads once their batches are done (without waiting here)."""
        self._normal.shutdown(wait=False)
        if self._bulk is not None:
            self._bulk.shutdown(wait=False)
