"""The load-adaptive half of a multi-instance plan: a lone call runs on the all-cores session, a call
arriving meanwhile waits for it and then runs as an instance, as do calls beside running instances."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from mcp2026ai.ir import import_model
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.lone import LoneGate
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.runtime.plan import Plan
from support.models import mlp_model

LONE = Plan(intra_op_threads=1, instances=2, lone_threads=2)
OPENVINO_LONE = Plan(
    runtime="openvino", intra_op_threads=1, performance_hint="THROUGHPUT", streams=2, instances=2, lone_threads=2
)


def _until(check: Callable[[], bool]) -> None:
    """Wait (bounded) until ``check()`` holds: a state reached, not a duration measured."""
    event = threading.Event()
    for _ in range(1000):
        if check():
            return
        event.wait(0.005)
    raise AssertionError("state not reached within 5 s")


def test_calls_one_after_another_run_alone() -> None:
    gate = LoneGate()
    for _ in range(3):
        with gate.enter() as alone:
            assert alone
    assert gate.lone_runs == 3


def test_a_call_arriving_during_a_lone_run_waits_then_runs_as_an_instance() -> None:
    gate = LoneGate()
    modes: list[bool] = []
    release = threading.Event()

    def second() -> None:
        with gate.enter() as alone:
            modes.append(alone)
            release.wait(5)

    with gate.enter() as first_alone:
        assert first_alone
        worker = threading.Thread(target=second)
        worker.start()
        _until(lambda: gate.waiting == 1)
        assert modes == [], "it waits while the lone run holds every core"
    _until(lambda: modes == [False])  # then runs as an instance
    with gate.enter() as third_alone:  # beside a running instance: an instance too, at once
        assert not third_alone
    release.set()
    worker.join(5)
    assert gate.lone_runs == 1 and gate.waiting == 0


def test_after_meeting_concurrency_calls_stay_on_the_instances_for_the_hold() -> None:
    """Under load the gap between two instance batches (both just ended, the next not yet dispatched)
    must not hand the next batch to the lone session: it would make the one after it wait, a core
    idle, and spin both threads at every barrier while other processes hold a core."""
    now = [0.0]
    gate = LoneGate(hold_s=1.0, clock=lambda: now[0])
    with gate.enter() as first_alone:
        assert first_alone
    release = threading.Event()
    entered = threading.Event()

    def beside() -> None:
        with gate.enter() as alone:
            assert not alone
            entered.set()
            release.wait(5)

    with gate.enter() as alone:  # no hold yet: alone, and a call arriving meanwhile meets it
        assert alone
        worker = threading.Thread(target=beside)
        worker.start()
        _until(lambda: gate.waiting == 1)
    entered.wait(5)
    now[0] = 0.3  # the instance that met the lone run ends here: the hold runs from its end
    release.set()
    worker.join(5)
    now[0] = 0.8  # nothing runs now, but concurrency ended within the hold
    with gate.enter() as alone:
        assert not alone, "an instance, while the hold lasts"
    now[0] = 1.4  # the call above met nobody, so it did not extend the hold: alone again
    with gate.enter() as alone:
        assert alone
    assert gate.lone_runs == 3


def test_lone_threads_need_several_instances_and_name_the_lone_session() -> None:
    with pytest.raises(ValidationError, match="lone_threads"):
        Plan(intra_op_threads=1, lone_threads=2)
    assert "instances=2 lone=2" in LONE.describe()
    assert LONE.lone_plan() == Plan(intra_op_threads=2)
    latency = Plan(runtime="openvino", intra_op_threads=2, performance_hint="LATENCY", streams=1)
    assert OPENVINO_LONE.lone_plan() == latency


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_a_lone_plan_gives_the_plain_plans_outputs_alone_and_concurrently(tmp_path: Path, runtime: str) -> None:
    if runtime == "openvino":
        pytest.importorskip("openvino", reason="the [openvino] extra")
        plan = OPENVINO_LONE
    else:
        plan = LONE
    path = mlp_model(tmp_path / "mlp.onnx")
    signature = import_model(path, tmp_path).signature
    reference: OnnxRuntimeBackend = create_backend(path, signature, Plan(intra_op_threads=1))  # type: ignore[assignment]
    backend = create_backend(path, signature, plan)
    reference.load()
    backend.load()
    rng = np.random.default_rng(0)
    batches = [{"x": rng.standard_normal((rows, 16)).astype(np.float32)} for rows in (1, 3, 2, 5, 1, 4, 2, 3)]
    expected = [reference.infer(batch)["probs"] for batch in batches]
    for batch, want in zip(batches, expected, strict=True):  # one after another: every one alone
        np.testing.assert_allclose(backend.infer(batch)["probs"], want, rtol=1e-5, atol=1e-6)
    gate: LoneGate = backend.gate  # type: ignore[attr-defined]
    assert gate.lone_runs == len(batches)
    with ThreadPoolExecutor(4) as pool:  # side by side: alone or as instances, the same numbers
        for got, want in zip(pool.map(lambda b: backend.infer(b)["probs"], batches * 4), expected * 4, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    backend.unload()
