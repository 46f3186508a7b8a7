"""Where a batch runs: on the batcher's worker thread, or inline on the event loop when it is tiny.

A backend's ``infer`` blocks, so a batch normally runs on a worker thread. The hop costs two hand-overs
of the GIL (to the worker, and back to the loop to resolve the futures); while the event loop is
busy decoding requests each hand-over can wait up to ``sys.getswitchinterval()`` (5 ms by default).
For a model whose whole batch takes microseconds (a small MLP) that wait is most of its latency, so
batches measured to take less than a limit run on the loop thread itself, where they block it for
less time than the hop would cost. Measured on the benchmarks' tiny MLP at concurrency 32
(perf_analyzer, two servers, 4 interleaved rounds, medians): gRPC 686 vs 604 req/s, p99 144 vs
176 ms; HTTP 1587 vs 1016 req/s, p99 51 vs 81 ms.

The first batches always go to the thread (nothing is known yet); every batch's compute time (the
CPU time of the thread that called ``infer``, so that waiting for the GIL does not count) feeds
an exponential average, so a model that turns slow (larger batches, a busier machine) goes back to
the thread after one slow batch. That measure is only the batch's compute when the calling thread does
the work, one batch at a time: an executor with several batch slots never runs inline (a limit of 0),
nor does a plan whose runtime computes on threads of its own (OpenVINO's THROUGHPUT streams, whose
caller only waits: its CPU time read as tiny and put 40 ms ResNet-50 batches on the loop).
"""

from __future__ import annotations

SMOOTHING = 0.3
"""Weight of the newest batch in the average: one batch 10x over the limit sends the next ones to the thread."""


class ExecutionPlacement:
    """Decides, batch by batch, whether the next one runs inline (on the event loop) or on the worker thread."""

    def __init__(self, inline_below_ms: float) -> None:
        self.limit_s = inline_below_ms / 1000.0
        self._average_s: float | None = None

    @property
    def inline(self) -> bool:
        return self._average_s is not None and self._average_s < self.limit_s

    @property
    def average_s(self) -> float | None:
        """Smoothed compute time of recent batches, in seconds (None before the first)."""
        return self._average_s

    def observe(self, compute_s: float) -> None:
        """Record how long one batch's ``infer`` took."""
        if self._average_s is None:
            self._average_s = compute_s
        else:
            self._average_s += SMOOTHING * (compute_s - self._average_s)
