"""The ceiling: raw offline throughput (no server, no network) at a given batch size, per runtime:
onnxruntime with the server's default session options, and OpenVINO (when its extra is installed) as
the server's OpenVINO backend compiles it; and each again as one single-threaded instance per core
run at once, the batch's rows split among them (what a multi-instance plan does with queued work).
The report takes the best runtime's figure."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
    """The model compiled as the server's OpenVINO backend compiles it for ``plan``, driven like a session;
    ``requests`` infer requests of the one compiled model, for as many concurrent callers
    (:meth:`caller`)."""

    def __init__(self, path: Path, plan: Plan) -> None:
        import openvino as ov

        from mcp2026ai.runtime.openvino import compile_config

        core = ov.Core()
        self._model = core.read_model(str(path))
        self._compiled = core.compile_model(self._model, "CPU", compile_config(plan))
        self._request = self._compiled.create_infer_request()

    def caller(self) -> _OpenVinoCaller:
        """A runner of the same compiled model with an infer request of its own."""
        return _OpenVinoCaller(self, self._compiled.create_infer_request())

    def get_inputs(self) -> Sequence[_Input]:
        return [_Input(port.any_name) for port in self._compiled.inputs]

    def run(self, output_names: None, feed: dict[str, np.ndarray]) -> object:
        return self._request.infer(feed)


class SplitRunner:
    """``instances`` runners of one thread each, driven at once: a feed's rows are split among them
    (a feed of fewer rows than instances runs on the first alone)."""

    def __init__(self, runners: list[Runner]) -> None:
        self._runners = runners
        self._pool = ThreadPoolExecutor(max_workers=len(runners))

    def get_inputs(self) -> Sequence[Any]:
        return self._runners[0].get_inputs()

    def run(self, output_names: None, feed: dict[str, np.ndarray]) -> object:
        rows = len(next(iter(feed.values())))
        parts = min(rows, len(self._runners))
        pieces = [{name: np.array_split(array, parts)[i] for name, array in feed.items()} for i in range(parts)]
        futures = [
            self._pool.submit(runner.run, None, piece) for runner, piece in zip(self._runners, pieces, strict=False)
        ]
        return [future.result() for future in futures]


@dataclass(frozen=True)
class _OpenVinoCaller:
    session: OpenVinoSession
    request: Any

    def get_inputs(self) -> Sequence[_Input]:
        return self.session.get_inputs()

    def run(self, output_names: None, feed: dict[str, np.ndarray]) -> object:
        return self.request.infer(feed)


def open_runtimes(path: Path) -> dict[str, Runner]:
    """onnxruntime, and OpenVINO where installed (all cores: the LATENCY hint, threads left to the plugin),
    and with several cores each as single-threaded instances (onnxruntime: one session run from as many
    threads; OpenVINO: one stream per instance)."""
    runners: dict[str, Runner] = {"onnxruntime": open_session(path)}
    if importlib.util.find_spec("openvino") is not None:
        runners["openvino"] = OpenVinoSession(path, Plan(runtime="openvino", performance_hint="LATENCY"))
    cores = len(os.sched_getaffinity(0))
    if cores > 1:
        one_thread = open_session(path, Plan(intra_op_threads=1))
        runners[f"onnxruntime 1x{cores}"] = SplitRunner([one_thread] * cores)
        if "openvino" in runners:
            streams = Plan(runtime="openvino", intra_op_threads=1, performance_hint="THROUGHPUT", streams=cores)
            compiled = OpenVinoSession(path, streams)
            runners[f"openvino 1x{cores}"] = SplitRunner([compiled.caller() for _ in range(cores)])
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
