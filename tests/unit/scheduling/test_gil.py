"""The GIL switch interval is short while a long run is on a worker thread, Python's otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import AdaptiveConfig, BatchingConfig, BatchingExecutor
from mcp2026ai.scheduling.direct import DirectExecutor
from mcp2026ai.scheduling.gil import SHORT_INTERVAL_S, SWITCH_INTERVAL, SwitchInterval
from mcp2026ai.scheduling.host import HostTuning, apply_host_tuning

from .conftest import MLP_IN
from .support import RecordingBackend, no_deadlines, run


@pytest.fixture(autouse=True)
def python_default_interval() -> Iterator[float]:
    """Every test starts and ends at the interval the process had (5 ms unless something changed it),
    with the process's switch set as host tuning sets it (the latency preset's interval), then off again."""
    before = sys.getswitchinterval()
    apply_host_tuning(HostTuning(gil_switch_interval_ms=SHORT_INTERVAL_S * 1000))
    try:
        yield before
    finally:
        apply_host_tuning(HostTuning())
    assert SWITCH_INTERVAL.short_s is None, "off: the interval is never changed"
    assert sys.getswitchinterval() == before, "the interval was not restored"


def test_off_by_default_and_the_latency_presets_interval() -> None:
    assert SwitchInterval().short_s is None and HostTuning().gil_switch_interval_ms is None
    assert HostTuning(preset="latency").switch_interval_s == pytest.approx(SHORT_INTERVAL_S)


def test_short_only_inside_a_long_run_and_restored_after_the_last(python_default_interval: float) -> None:
    switch = SwitchInterval(short_s=0.0005)
    with switch.run(compute_s=0.002):
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        with switch.run(compute_s=0.010):
            assert switch.long_runs == 2
        assert sys.getswitchinterval() == pytest.approx(0.0005), "one long run is still in progress"
    assert sys.getswitchinterval() == python_default_interval and switch.long_runs == 0


@pytest.mark.parametrize("compute_s", [None, 0.0001])
def test_short_or_unknown_runs_leave_the_interval_alone(
    compute_s: float | None, python_default_interval: float
) -> None:
    with SwitchInterval(short_s=0.0005).run(compute_s):
        assert sys.getswitchinterval() == python_default_interval


def test_none_never_changes_it_and_a_longer_setting_never_lengthens_it(python_default_interval: float) -> None:
    with SwitchInterval(short_s=None).run(compute_s=1.0):
        assert sys.getswitchinterval() == python_default_interval
    with SwitchInterval(short_s=python_default_interval * 10).run(compute_s=1.0):
        assert sys.getswitchinterval() == python_default_interval


def test_an_error_in_the_run_still_restores_it() -> None:
    switch = SwitchInterval(short_s=0.0005)
    with pytest.raises(RuntimeError), switch.run(compute_s=0.002):
        raise RuntimeError("the backend failed")
    assert switch.long_runs == 0


def _batched(backend: RecordingBackend, requests: int) -> list[dict[str, np.ndarray]]:
    """``requests`` one after another through a batcher of two slots (so never inline on the loop)."""
    settings = BatchingConfig(
        classes=no_deadlines(), max_queue_delay_ms=0, adaptive=AdaptiveConfig(enabled=False), max_concurrent_batches=2
    )

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(backend, settings)  # type: ignore[arg-type]
        await executor.start()
        try:
            inputs = {"x": np.ones((1, MLP_IN), np.float32)}
            return [
                await executor.submit(inputs, None, sla_class=SLAClass.BEST_EFFORT, deadline=None)
                for _ in range(requests)
            ]
        finally:
            await executor.stop(drain_timeout_s=5)

    return run(scenario())


def test_a_slow_model_runs_at_the_short_interval_once_measured(
    mlp_backend: OnnxRuntimeBackend, python_default_interval: float
) -> None:
    backend = RecordingBackend(mlp_backend, burn_ms=3.0)
    results = _batched(backend, 4)
    assert backend.intervals[0] == python_default_interval, "the first batch is not measured yet"
    assert backend.intervals[1:] == [pytest.approx(SHORT_INTERVAL_S)] * 3
    expected = mlp_backend.infer({"x": np.ones((1, MLP_IN), np.float32)})["logits"]
    for result in results:
        np.testing.assert_allclose(result["logits"], expected, rtol=1e-6)


def test_a_tiny_model_keeps_pythons_interval(mlp_backend: OnnxRuntimeBackend, python_default_interval: float) -> None:
    """Microsecond batches: the event loop limits the server, and handing it over more often costs it."""
    backend = RecordingBackend(mlp_backend, burn_ms=0.0)
    _batched(backend, 6)
    assert backend.intervals == [python_default_interval] * 6


def test_the_direct_executor_does_the_same(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = RecordingBackend(mlp_backend, burn_ms=3.0)

    async def scenario() -> None:
        executor = DirectExecutor(backend)  # type: ignore[arg-type]
        await executor.start()
        inputs = {"x": np.ones((1, MLP_IN), np.float32)}
        for _ in range(3):
            await executor.submit(inputs, None, sla_class=SLAClass.BEST_EFFORT, deadline=None)
        await executor.stop(drain_timeout_s=5)

    run(scenario())
    assert backend.intervals[1:] == [pytest.approx(SWITCH_INTERVAL.short_s)] * 2
