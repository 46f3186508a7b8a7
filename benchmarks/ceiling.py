"""The ceiling: raw onnxruntime offline throughput (no server, no network) at a given batch size."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from mcp2026ai.runtime.onnx import session_options
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan


@dataclass(frozen=True)
class CeilingResult:
    batch: int
    rows_per_s: float
    cpu_ms_per_row: float
    """CPU time of this process (onnxruntime's threads included) per row: load on the machine
    disturbs it far less than it disturbs rows_per_s."""
    runs: int
    seconds: float


def open_session(path: Path, plan: Plan = DEFAULT_PLAN) -> ort.InferenceSession:
    """A session with exactly the options the server builds from ``plan`` (threads, optimization level)."""
    return ort.InferenceSession(str(path), session_options(plan), providers=["CPUExecutionProvider"])


def offline_throughput(
    session: ort.InferenceSession, sample_shape: tuple[int, ...], batch: int, min_runs: int, min_seconds: float
) -> CeilingResult:
    """Rows per second of back-to-back ``session.run`` calls at ``batch`` rows, after one warm-up run
    (at least ``min_runs`` runs and ``min_seconds``).

    The input is zeros, as perf_analyzer sends (``--input-data zero``): the same data matters, since
    on the synthetic-weight ResNet-50 random inputs run ~1.5x slower (denormal activations).
    """
    name = session.get_inputs()[0].name
    feed = {name: np.zeros((batch, *sample_shape), np.float32)}
    session.run(None, feed)
    runs = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    while runs < min_runs or time.perf_counter() - started < min_seconds:
        session.run(None, feed)
        runs += 1
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    return CeilingResult(batch, runs * batch / seconds, cpu_seconds * 1000 / (runs * batch), runs, seconds)
