"""Best-effort models built on a lowered thread (scheduling/load_priority.py, runtime/thread_priority.py):
the workers their session creates run that much nicer, read back from /proc/self/task, and block instead
of spinning; the caller's thread keeps its priority."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.contract import InferenceContract, SLAClass
from mcp2026ai.ir import import_model
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.runtime.plan import Plan
from mcp2026ai.runtime.thread_priority import (
    BLOCKING_WORKERS,
    THREAD_PRIORITIES,
    on_lowered_thread,
    run_lowered,
    thread_nice,
)
from mcp2026ai.scheduling.cpu_priority import URGENT_HOLD_S, BatchThreads, UrgentWindow
from mcp2026ai.scheduling.host import HostTuning
from mcp2026ai.scheduling.load_priority import LoadThreads, sla_class_of
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.cli import run_main
from tests.support.clock import FakeClock

pytestmark = pytest.mark.skipif(not THREAD_PRIORITIES, reason="threads have no nice value of their own here")
SPINNING = next(iter(BLOCKING_WORKERS))


def task_nices() -> dict[int, int]:
    """Each thread of this process, by its id, with its nice value (field 19 of /proc/self/task/TID/stat)."""
    nices = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        nices[int(task.name)] = int(fields[16])
    return nices


def built(threads: LoadThreads, sla_class: SLAClass) -> tuple[OnnxRuntimeBackend, dict[int, int]]:
    """The OCR classifier's session (two intra-op threads: one worker beside the caller) built the way
    ``threads`` builds a model of ``sla_class``; and the threads that appeared meanwhile that Python did
    not start (onnxruntime's workers), with their nice values."""
    path = bundled_model_path("ocr-cls")
    backend = OnnxRuntimeBackend(path, import_model(path, path.parent).signature, Plan(intra_op_threads=2))
    before = set(task_nices())
    asyncio.run(threads.run(sla_class, backend.load))
    python_threads = {thread.native_id for thread in threading.enumerate()}
    workers = {tid: nice for tid, nice in task_nices().items() if tid not in before and tid not in python_threads}
    return backend, workers


def spinning_entry(backend: OnnxRuntimeBackend) -> str | None:
    options = backend._session.get_session_options()  # type: ignore[union-attr]
    try:
        return str(options.get_session_config_entry(SPINNING))
    except RuntimeError:  # not set: onnxruntime's default (spinning)
        return None


def answers(backend: OnnxRuntimeBackend) -> np.ndarray:
    image = np.random.default_rng(3).random((1, 3, 48, 192), np.float32)
    return next(iter(backend.infer({backend.signature.inputs[0].name: image}).values()))


def test_a_best_effort_models_workers_start_lowered_and_block_instead_of_spinning() -> None:
    base = thread_nice()
    lowered, workers = built(LoadThreads(best_effort_nice=10), SLAClass.BEST_EFFORT)
    assert workers and set(workers.values()) == {min(19, base + 10)}, workers
    assert spinning_entry(lowered) == "0"
    normal, _ = built(LoadThreads(), SLAClass.BEST_EFFORT)
    np.testing.assert_allclose(answers(lowered), answers(normal), rtol=1e-6)  # same kernels, same answer
    assert thread_nice() == base, "the caller's own thread keeps its priority"


def test_latency_critical_models_and_the_knob_off_build_at_normal_priority() -> None:
    base = thread_nice()
    threads = LoadThreads(best_effort_nice=10)
    for loader, sla_class in ((threads, SLAClass.LATENCY_CRITICAL), (threads, SLAClass.THROUGHPUT_GUARANTEED),
                              (LoadThreads(), SLAClass.BEST_EFFORT)):  # fmt: skip
        backend, workers = built(loader, sla_class)
        assert workers and set(workers.values()) == {base}, (sla_class, workers)
        assert spinning_entry(backend) is None


def test_only_a_best_effort_build_with_the_knob_on_runs_on_a_lowered_thread() -> None:
    threads = LoadThreads(best_effort_nice=5)
    assert asyncio.run(threads.run(SLAClass.BEST_EFFORT, on_lowered_thread)) is True
    assert asyncio.run(threads.run(SLAClass.BEST_EFFORT, thread_nice)) == min(19, thread_nice() + 5)
    assert asyncio.run(threads.run(SLAClass.LATENCY_CRITICAL, on_lowered_thread)) is False
    assert asyncio.run(LoadThreads().run(SLAClass.BEST_EFFORT, on_lowered_thread)) is False
    assert not on_lowered_thread()
    assert sla_class_of(None) is SLAClass.BEST_EFFORT
    assert sla_class_of(InferenceContract(sla_class=SLAClass.LATENCY_CRITICAL)) is SLAClass.LATENCY_CRITICAL


def test_a_lowered_builds_error_is_raised_on_the_callers_thread() -> None:
    def broken() -> None:
        raise ValueError("no such model")

    with pytest.raises(ValueError, match="no such model"):
        run_lowered(broken, 5)


def test_the_knob_is_off_by_default_and_reaches_both_tables_of_served_models(
    registry: ModelRegistry, mlp_path: Path
) -> None:
    assert HostTuning().best_effort_load_nice is None and "best_effort_load_nice" not in HostTuning().changes()
    registry.register("mlp", mlp_path)
    config = ServerConfig(http_port=0, grpc_port=None, host_tuning=HostTuning(best_effort_load_nice=10))
    with BackgroundServer(registry, ["mlp"], config) as server:
        assert server.plane.models.load_threads is server.plane.llms.load_threads
        assert server.plane.models.load_threads.best_effort_nice == 10


def test_the_flag_sets_it_and_a_bad_value_is_one_clear_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    printed = run_main(["serve", "--print-config", "--best-effort-load-nice", "10"], capsys, monkeypatch)
    assert printed.code == 0 and yaml.safe_load(printed.out)["host_tuning"]["best_effort_load_nice"] == 10
    refused = run_main(["serve", "--print-config", "--best-effort-load-nice", "25"], capsys, monkeypatch)
    expected = "error: --best-effort-load-nice: Input should be less than or equal to 19 (value: 25)"
    assert refused.code == 2 and refused.err.strip() == expected, refused.err


def test_a_shared_window_runs_one_models_bulk_batches_lower_while_another_serves_latency_critical() -> None:
    clock = FakeClock()
    window = UrgentWindow()
    pinned, best_effort = (BatchThreads(1, bulk_nice=10, clock=clock, window=window) for _ in range(2))
    alone = BatchThreads(1, bulk_nice=10, clock=clock)  # a window of its own: the executor's default
    try:
        normal, own = best_effort.for_batch(urgent=False), alone.for_batch(urgent=False)
        pinned.for_batch(urgent=True)  # the pinned model runs a latency-critical batch
        assert best_effort.for_batch(urgent=False) is not normal, "the other model's batch goes to its bulk pool"
        assert alone.for_batch(urgent=False) is own
        clock.advance(URGENT_HOLD_S * 2)
        assert best_effort.for_batch(urgent=False) is normal
    finally:
        for threads in (pinned, best_effort, alone):
            threads.shutdown()
