"""Per model-version inference statistics in Triton's shape (GET .../stats, ModelStatistics)."""

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
class ModelStats:
    name: str
    version: str
    success: DurationStat = field(default_factory=DurationStat)
    fail: DurationStat = field(default_factory=DurationStat)
    queue: DurationStat = field(default_factory=DurationStat)
    compute_infer: DurationStat = field(default_factory=DurationStat)
    inference_count: int = 0
    execution_count: int = 0
    last_inference_ms: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_success(self, rows: int, total_ns: int) -> None:
        with self._lock:
            self.success.add(total_ns)
            self.inference_count += rows
            self.execution_count += 1
            self.last_inference_ms = int(time.time() * 1000)

    def record_failure(self, total_ns: int) -> None:
        with self._lock:
            self.fail.add(total_ns)
            self.last_inference_ms = int(time.time() * 1000)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            empty = DurationStat().as_dict()
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
                    "compute_input": empty,
                    "compute_infer": self.compute_infer.as_dict(),
                    "compute_output": empty,
                },
                "batch_stats": [],
            }
