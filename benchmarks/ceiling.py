"""The ceiling: raw offline throughput (no server, no network) at a given batch size, per runtime:
onnxruntime with the server's default session options, and OpenVINO (when its extra is installed) as
the server's OpenVINO backend compiles it. The report takes the best runtime's figure."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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


class Runner(Protocol):
    """What the ceiling drives: one model's inference at the given feed."""

    def run(self, output_names: None, feed: dict[str, np.ndarray]) -> object: ...

    def get_inputs(self) -> Sequence[Any]: ...


def open_session(path: Path, plan: Plan = DEFAULT_PLAN) -> ort.InferenceSession:
    """A session with exactly the options the server builds from ``plan`` (threads, optimization level)."""
    return ort.InferenceSession(str(path), session_options(plan), providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class _Input:
    name: str


class OpenVinoSession:
    """The model compiled as the server's OpenVINO backend compiles it for ``plan``, driven like a session."""

    def __init__(self, path: Path, plan: Plan) -> None:
        import openvino as ov

        from mcp2026ai.runtime.openvino import compile_config

        core = ov.Core()
        self._model = core.read_model(str(path))
        self._compiled = core.compile_model(self._model, "CPU", compile_config(plan))
        self._request = self._compiled.create_infer_request()

    def get_inputs(self) -> Sequence[_Input]:
        return [_Input(port.any_name) for port in self._compiled.inputs]

    def run(self, output_names: None, feed: dict[str, np.ndarray]) -> object:
        return self._request.infer(feed)


def open_runtimes(path: Path) -> dict[str, Runner]:
    """onnxruntime, and OpenVINO where installed (all cores: the LATENCY hint, threads left to the plugin)."""
    runners: dict[str, Runner] = {"onnxruntime": open_session(path)}
    if importlib.util.find_spec("openvino") is not None:
        runners["openvino"] = OpenVinoSession(path, Plan(runtime="openvino", performance_hint="LATENCY"))
    return runners


def offline_throughput(
    session: Runner, sample_shape: tuple[int, ...], batch: int, min_runs: int, min_seconds: float
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
