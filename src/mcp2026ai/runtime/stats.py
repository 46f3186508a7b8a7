"""Per model-version inference statistics in Triton's shape (GET .../stats, ModelStatistics).

As Triton counts them: ``inference_stats`` is per request, so each request of a batch is charged the
whole batch's compute (``compute_*`` count requests, as ``success`` and ``queue`` do, and perf_analyzer's
server-side breakdown, each total over its count, then adds up to a request's time in the server);
``batch_stats`` is per execution, one entry per batch size (rows) run.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class DurationStat:
    count: int = 0
    ns: int = 0

    def add(self, ns: int) -> None:
        self.count += 1
        self.ns += ns

    def as_dict(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


@dataclass
class BatchStats:
    """One batch size's executions (Triton's InferBatchStatistics): each counted once."""

    batch_size: int
    compute_input: DurationStat = field(default_factory=DurationStat)
    compute_infer: DurationStat = field(default_factory=DurationStat)
    compute_output: DurationStat = field(default_factory=DurationStat)

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "compute_input": self.compute_input.as_dict(),
            "compute_infer": self.compute_infer.as_dict(),
            "compute_output": self.compute_output.as_dict(),
        }


def _compute(stats: ModelStats | BatchStats) -> tuple[DurationStat, DurationStat, DurationStat]:
    return stats.compute_input, stats.compute_infer, stats.compute_output


@dataclass
class ModelStats:
    name: str
    version: str
    success: DurationStat = field(default_factory=DurationStat)
    fail: DurationStat = field(default_factory=DurationStat)
    queue: DurationStat = field(default_factory=DurationStat)
    compute_input: DurationStat = field(default_factory=DurationStat)
    compute_infer: DurationStat = field(default_factory=DurationStat)
    compute_output: DurationStat = field(default_factory=DurationStat)
    inference_count: int = 0
    execution_count: int = 0
    last_inference_ms: int = 0
    _window_ms: list[float] = field(default_factory=list, repr=False)
    _batches: dict[int, BatchStats] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    WINDOW_LIMIT = 10_000

    def take_window(self) -> list[float]:
        """End-to-end latencies (ms) of successful requests since the last call (bounded sample)."""
        with self._lock:
            window, self._window_ms = self._window_ms, []
        return window

    def record_success(self, rows: int, total_ns: int) -> None:
        with self._lock:
            if len(self._window_ms) < self.WINDOW_LIMIT:
                self._window_ms.append(total_ns / 1e6)
            self.success.add(total_ns)
            self.inference_count += rows
            self.last_inference_ms = int(time.time() * 1000)

    def record_queue(self, requests: int, wait_ns: int) -> None:
        """``requests`` left the queue after waiting ``wait_ns`` in total."""
        with self._lock:
            self.queue.count += requests
            self.queue.ns += wait_ns

    def record_execution(
        self, infer_ns: int, input_ns: int = 0, output_ns: int = 0, *, requests: int = 1, rows: int = 1
    ) -> None:
        """One backend run of ``requests`` requests (``rows`` rows in all): time to assemble the inputs,
        run, and split the outputs. Executors that neither copy inputs nor split outputs pass 0 for those."""
        with self._lock:
            self.execution_count += 1
            durations = (input_ns, infer_ns, output_ns)
            for stat, ns in zip(_compute(self), durations, strict=True):
                stat.count += requests
                stat.ns += ns * requests
            for stat, ns in zip(_compute(self._batch(rows)), durations, strict=True):
                stat.add(ns)

    def _batch(self, rows: int) -> BatchStats:
        if rows not in self._batches:
            self._batches[rows] = BatchStats(rows)
        return self._batches[rows]

    def record_failure(self, total_ns: int) -> None:
        with self._lock:
            self.fail.add(total_ns)
            self.last_inference_ms = int(time.time() * 1000)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "name": self.name,
                "version": self.version,
                "last_inference": self.last_inference_ms,
                "inference_count": self.inference_count,
                "execution_count": self.execution_count,
                "inference_stats": {
                    "success": self.success.as_dict(),
                    "fail": self.fail.as_dict(),
                    "queue": self.queue.as_dict(),
                    "compute_input": self.compute_input.as_dict(),
                    "compute_infer": self.compute_infer.as_dict(),
                    "compute_output": self.compute_output.as_dict(),
                },
                "batch_stats": [batch.as_dict() for _, batch in sorted(self._batches.items())],
            }
