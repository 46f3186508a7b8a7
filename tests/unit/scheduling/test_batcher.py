"""BatchingExecutor end to end on real onnxruntime sessions of small generated models."""

from __future__ import annotations

import asyncio
from collections import Counter

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import (
    DeadlineExceededError,
    InferenceFailedError,
    InvalidInputError,
    ModelNotReadyError,
    OverloadedError,
)
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import BatchingConfig, BatchingExecutor, ClassPolicy
from mcp2026ai.scheduling.config import default_classes
from tests.support.clock import FakeClock

from .conftest import MLP_IN
from .support import GatedBackend, batching_config, metric, no_deadlines, run

LC, TG, BE = SLAClass.LATENCY_CRITICAL, SLAClass.THROUGHPUT_GUARANTEED, SLAClass.BEST_EFFORT
CLASSES = list(SLAClass)


def _x(rows: int, seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((rows, MLP_IN)).astype(np.float32)}


def test_concurrent_submits_match_one_by_one_inference(mlp_backend: OnnxRuntimeBackend, model_name: str) -> None:
    requests = [_x(1 + i % 3, seed=i) for i in range(60)]
    expected = [mlp_backend.infer(inputs) for inputs in requests]

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(mlp_backend, batching_config(max_queue_delay_ms=50), model=model_name, version="1")
        await executor.start()
        submits = [
            executor.submit(inputs, None, sla_class=CLASSES[i % 3], deadline=None) for i, inputs in enumerate(requests)
        ]
        results = await asyncio.gather(*submits)
        await executor.stop(drain_timeout_s=5)
        return results

    results = run(scenario())
    for got, want in zip(results, expected, strict=True):
        assert got.keys() == want.keys()
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)
    labels = {"model": model_name, "version": "1"}
    batches = metric("mcp_scheduler_batch_rows_count", **labels)
    assert metric("mcp_scheduler_batch_rows_sum", **labels) == sum(len(r["x"]) for r in requests)
    assert 0 < batches < len(requests), "requests were merged into batches"
    assert metric("mcp_scheduler_batch_rows_bucket", le="1.0", **labels) < batches, "some batch had several rows"
    assert metric("mcp_scheduler_batch_fill_ratio_count", **labels) == batches
    assert metric("mcp_scheduler_queue_delay_seconds", **labels) == pytest.approx(0.05)


def test_each_member_gets_only_the_outputs_it_asked_for(mlp_backend: OnnxRuntimeBackend) -> None:
    wanted: list[list[str] | None] = [["logits"], ["hidden"], None, ["hidden", "logits"]]
    requests = [_x(2, seed=i) for i in range(len(wanted))]

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(mlp_backend, batching_config(preferred_batch_sizes=[8]))
        await executor.start()
        submits = [
            executor.submit(x, names, sla_class=BE, deadline=None) for x, names in zip(requests, wanted, strict=True)
        ]
        results = await asyncio.gather(*submits)
        await executor.stop(drain_timeout_s=5)
        return results

    results = run(scenario())
    assert [list(result) for result in results] == [["logits"], ["hidden"], ["logits", "hidden"], ["hidden", "logits"]]
    for inputs, result in zip(requests, results, strict=True):
        whole = mlp_backend.infer(inputs)
        for name, array in result.items():
            np.testing.assert_allclose(array, whole[name], rtol=1e-5, atol=1e-6)


def test_a_batch_failure_fails_every_member_with_the_same_error(one_row_backend: OnnxRuntimeBackend) -> None:
    async def scenario() -> tuple[list[object], dict[str, np.ndarray]]:
        executor = BatchingExecutor(one_row_backend, batching_config(max_batch_size=8, preferred_batch_sizes=[3]))
        await executor.start()
        rows = [{"x": np.full((1, 4), i, dtype=np.float32)} for i in range(3)]
        outcomes = await asyncio.gather(
            *(executor.submit(x, None, sla_class=TG, deadline=None) for x in rows), return_exceptions=True
        )
        alone = await executor.submit(rows[0], None, sla_class=TG, deadline=None)
        await executor.stop(drain_timeout_s=5)
        return outcomes, alone

    outcomes, alone = run(scenario())
    assert all(isinstance(outcome, InferenceFailedError) for outcome in outcomes), outcomes
    assert outcomes[0] is outcomes[1] is outcomes[2]
    assert "onnxruntime failed" in str(outcomes[0])
    np.testing.assert_array_equal(alone["y"], np.zeros((1, 4), dtype=np.float32))


def test_expired_requests_are_rejected_before_they_reach_the_model(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    clock = FakeClock()
    gated = GatedBackend(mlp_backend)

    async def scenario() -> list[object]:
        config = batching_config(max_batch_size=4, classes=default_classes())
        executor = BatchingExecutor(gated, config, model=model_name, version="1", clock=clock)
        await executor.start()
        first = asyncio.ensure_future(executor.submit(_x(1, 0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        queued = [
            executor.submit(_x(1, 1), None, sla_class=LC, deadline=None),
            executor.submit(_x(1, 2), None, sla_class=TG, deadline=clock.now + 0.01),
            executor.submit(_x(1, 3), None, sla_class=TG, deadline=None),
            executor.submit(_x(1, 4), None, sla_class=BE, deadline=None),
        ]
        waiting = asyncio.gather(*queued, return_exceptions=True)
        await asyncio.sleep(0)
        clock.advance(0.1)
        gated.gate.set()
        outcomes = [await first, *await waiting]
        with pytest.raises(DeadlineExceededError, match="request timeout expired"):
            await executor.submit(_x(1, 5), None, sla_class=BE, deadline=clock.now - 1)
        await executor.stop(drain_timeout_s=5)
        return outcomes

    outcomes = run(scenario())
    assert isinstance(outcomes[1], DeadlineExceededError), "latency-critical: 50 ms class deadline"
    assert isinstance(outcomes[2], DeadlineExceededError), "a per-request deadline shortens the class one"
    assert str(outcomes[1]) == "request timeout expired"
    assert all(isinstance(outcomes[i], dict) for i in (0, 3, 4))
    assert gated.rows == [1, 2], "the expired requests never ran"
    assert (
        metric("mcp_scheduler_rejections_total", model=model_name, version="1", sla_class=LC.value, reason="deadline")
        == 1
    )
    assert (
        metric("mcp_scheduler_rejections_total", model=model_name, version="1", sla_class=BE.value, reason="deadline")
        == 1
    )


def test_a_full_class_queue_raises_overloaded(mlp_backend: OnnxRuntimeBackend, model_name: str) -> None:
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[BE] = ClassPolicy(weight=1.0, capacity=2)

    async def scenario() -> list[dict[str, np.ndarray]]:
        config = batching_config(max_batch_size=1, classes=classes, retry_after_s=0.25)
        executor = BatchingExecutor(gated, config, model=model_name, version="1")
        await executor.start()
        accepted = [asyncio.ensure_future(executor.submit(_x(1, 0), None, sla_class=BE, deadline=None))]
        await gated.wait_entered()
        accepted += [
            asyncio.ensure_future(executor.submit(_x(1, i), None, sla_class=BE, deadline=None)) for i in (1, 2)
        ]
        await asyncio.sleep(0)
        assert executor.backlog == 2
        with pytest.raises(OverloadedError, match="best-effort queue is full") as caught:
            await executor.submit(_x(1, 3), None, sla_class=BE, deadline=None)
        assert caught.value.retry_after_s == 0.25
        accepted.append(asyncio.ensure_future(executor.submit(_x(1, 4), None, sla_class=LC, deadline=None)))
        await asyncio.sleep(0)
        gated.gate.set()
        results = list(await asyncio.gather(*accepted))
        await executor.stop(drain_timeout_s=5)
        return results

    results = run(scenario())
    assert len(results) == 4, "every accepted request got its result"
    labels = {"model": model_name, "version": "1", "sla_class": BE.value}
    assert metric("mcp_scheduler_rejections_total", reason="overloaded", **labels) == 1
    assert metric("mcp_scheduler_queue_depth", **labels) == 0


def test_stop_drains_every_accepted_request(mlp_backend: OnnxRuntimeBackend) -> None:
    gated = GatedBackend(mlp_backend)
    requests = [_x(4, seed=100), *(_x(1 + i % 2, seed=i) for i in range(20))]

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=4, max_queue_delay_ms=10_000))
        await executor.start()
        pending = [asyncio.ensure_future(executor.submit(requests[0], None, sla_class=BE, deadline=None))]
        await gated.wait_entered()  # a full batch (4 rows) goes at once
        pending += [
            asyncio.ensure_future(executor.submit(x, None, sla_class=CLASSES[i % 3], deadline=None))
            for i, x in enumerate(requests[1:])
        ]
        await asyncio.sleep(0)
        stopping = asyncio.ensure_future(executor.stop(drain_timeout_s=30))
        await asyncio.sleep(0)
        with pytest.raises(ModelNotReadyError, match="not accepting"):
            await executor.submit(requests[0], None, sla_class=LC, deadline=None)
        gated.gate.set()
        await stopping
        assert all(future.done() for future in pending)
        return [future.result() for future in pending]

    results = run(scenario())
    for inputs, result in zip(requests, results, strict=True):
        np.testing.assert_allclose(result["logits"], mlp_backend.infer(inputs)["logits"], rtol=1e-5, atol=1e-6)
    assert gated.rows[0] == 4
    assert max(gated.rows[1:]) > 1, "the drain still batches, without waiting out the 10 s window"


def test_a_drain_timeout_fails_what_never_started(mlp_backend: OnnxRuntimeBackend, model_name: str) -> None:
    gated = GatedBackend(mlp_backend)

    async def scenario() -> list[object]:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1), model=model_name, version="1")
        await executor.start()
        running = asyncio.ensure_future(executor.submit(_x(1, 0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        queued = [asyncio.ensure_future(executor.submit(_x(1, i), None, sla_class=TG, deadline=None)) for i in (1, 2)]
        await asyncio.sleep(0)
        await executor.stop(drain_timeout_s=0.05)
        failed = await asyncio.gather(*queued, return_exceptions=True)
        gated.gate.set()
        return [await running, *failed]

    outcomes = run(scenario())
    assert isinstance(outcomes[0], dict), "the batch already running still delivers its result"
    assert all(isinstance(outcome, ModelNotReadyError) for outcome in outcomes[1:])
    labels = {"model": model_name, "version": "1", "sla_class": TG.value}
    assert metric("mcp_scheduler_rejections_total", reason="shutdown", **labels) == 2


def test_dispatch_order_follows_the_class_weights(mlp_backend: OnnxRuntimeBackend) -> None:
    gated = GatedBackend(mlp_backend)
    marker = {cls: float(index) for index, cls in enumerate(SLAClass)}

    def tagged(cls: SLAClass) -> dict[str, np.ndarray]:
        return {"x": np.full((1, MLP_IN), marker[cls], dtype=np.float32)}

    async def scenario() -> None:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1), clock=FakeClock())
        await executor.start()
        first = asyncio.ensure_future(executor.submit(tagged(BE), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        rest = [executor.submit(tagged(cls), None, sla_class=cls, deadline=None) for cls in SLAClass for _ in range(40)]
        waiting = asyncio.gather(*rest)
        await asyncio.sleep(0)
        gated.gate.set()
        await first
        await waiting
        await executor.stop(drain_timeout_s=5)

    run(scenario())
    by_marker = {value: cls for cls, value in marker.items()}
    order = [by_marker[float(call["x"][0, 0])] for call in gated.calls[1:]]
    share = Counter(order[:27])
    assert abs(share[LC] - 15) <= 1 and abs(share[TG] - 9) <= 1 and abs(share[BE] - 3) <= 1, share
    assert len(order) == 120


def test_without_a_batch_dimension_each_request_runs_alone(fixed_mlp_backend: OnnxRuntimeBackend) -> None:
    config = BatchingConfig.from_contract(None, fixed_mlp_backend.signature)
    gated = GatedBackend(fixed_mlp_backend)
    gated.gate.set()
    requests = [_x(1, seed=i) for i in range(6)]

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(gated, config)
        await executor.start()
        results = await asyncio.gather(*(executor.submit(x, None, sla_class=TG, deadline=None) for x in requests))
        await executor.stop(drain_timeout_s=5)
        return list(results)

    results = run(scenario())
    assert gated.rows == [1] * 6
    for inputs, result in zip(requests, results, strict=True):
        np.testing.assert_array_equal(result["logits"], fixed_mlp_backend.infer(inputs)["logits"])


def test_requests_are_checked_before_they_are_queued(mlp_backend: OnnxRuntimeBackend) -> None:
    async def scenario() -> None:
        executor = BatchingExecutor(mlp_backend, batching_config(max_batch_size=4))
        with pytest.raises(ModelNotReadyError):
            await executor.submit(_x(1, 0), None, sla_class=BE, deadline=None)
        await executor.start()
        with pytest.raises(InvalidInputError, match="request has 5 rows; max_batch_size is 4"):
            await executor.submit(_x(5, 0), None, sla_class=BE, deadline=None)
        with pytest.raises(InvalidInputError, match="datatype FP64"):
            await executor.submit({"x": np.zeros((1, MLP_IN))}, None, sla_class=BE, deadline=None)
        with pytest.raises(InvalidInputError, match="unknown output 'nope'"):
            await executor.submit(_x(1, 0), ["nope"], sla_class=BE, deadline=None)
        assert executor.backlog == 0
        await executor.stop(drain_timeout_s=1)

    run(scenario())


def test_a_caller_that_gives_up_is_never_run(mlp_backend: OnnxRuntimeBackend) -> None:
    gated = GatedBackend(mlp_backend)

    async def scenario() -> None:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1))
        await executor.start()
        first = asyncio.ensure_future(executor.submit(_x(1, 0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        abandoned = asyncio.ensure_future(executor.submit(_x(1, 1), None, sla_class=LC, deadline=None))
        kept = asyncio.ensure_future(executor.submit(_x(1, 2), None, sla_class=BE, deadline=None))
        await asyncio.sleep(0)
        abandoned.cancel()
        await asyncio.sleep(0)
        gated.gate.set()
        await first
        await kept
        await executor.stop(drain_timeout_s=5)

    run(scenario())
    assert len(gated.calls) == 2
    np.testing.assert_array_equal(gated.calls[1]["x"], _x(1, 2)["x"])


def test_a_request_expiring_between_sweeps_is_still_rejected_before_running(mlp_backend: OnnxRuntimeBackend) -> None:
    clock = FakeClock()
    gated = GatedBackend(mlp_backend)

    async def scenario() -> object:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1), clock=clock)
        await executor.start()
        first = asyncio.ensure_future(executor.submit(_x(1, 0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        late = asyncio.ensure_future(executor.submit(_x(1, 1), None, sla_class=TG, deadline=clock.now + 0.0004))
        await asyncio.sleep(0)
        clock.advance(0.0005)  # past its deadline, within the sweep interval
        gated.gate.set()
        await first
        outcome = (await asyncio.gather(late, return_exceptions=True))[0]
        await executor.stop(drain_timeout_s=5)
        return outcome

    assert isinstance(run(scenario()), DeadlineExceededError)
    assert len(gated.calls) == 1


def test_a_measured_batch_caps_the_rows_merged_but_not_the_rows_a_request_may_carry(
    mlp_backend: OnnxRuntimeBackend,
) -> None:
    gated = GatedBackend(mlp_backend)
    first, queued, wide = _x(1, seed=200), [_x(1, seed=i) for i in range(5)], _x(6, seed=300)

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=8, batch_rows=2))
        await executor.start()
        pending = [asyncio.ensure_future(executor.submit(first, None, sla_class=BE, deadline=None))]
        await gated.wait_entered()  # the backend is busy: everything below queues up behind it
        pending += [asyncio.ensure_future(executor.submit(x, None, sla_class=BE, deadline=None)) for x in queued]
        pending.append(asyncio.ensure_future(executor.submit(wide, None, sla_class=BE, deadline=None)))
        await asyncio.sleep(0)
        gated.gate.set()
        results = await asyncio.gather(*pending)
        await executor.stop(drain_timeout_s=5)
        return list(results)

    results = run(scenario())
    for inputs, result in zip([first, *queued, wide], results, strict=True):
        np.testing.assert_allclose(result["logits"], mlp_backend.infer(inputs)["logits"], rtol=1e-5, atol=1e-6)
    assert gated.rows == [1, 2, 2, 1, 6]  # queued rows merged two at a time; the 6-row request alone


async def _two_instances(
    gated: GatedBackend, model_name: str, before: list[dict[str, np.ndarray]], after: list[dict[str, np.ndarray]]
) -> list[dict[str, np.ndarray]]:
    """Two instances: submit ``before``, wait until the backend is entered, submit ``after``, let the
    second instance take its share while the first is still held, then open the gate; the results."""
    executor = BatchingExecutor(
        gated, batching_config(max_batch_size=16, max_concurrent_batches=2), model=model_name, version="1"
    )
    await executor.start()
    submitted = [asyncio.ensure_future(executor.submit(x, None, sla_class=BE, deadline=None)) for x in before]
    await gated.wait_entered()
    submitted += [asyncio.ensure_future(executor.submit(x, None, sla_class=BE, deadline=None)) for x in after]
    for _ in range(100):
        if len(gated.calls) == 2:
            break
        await asyncio.sleep(0.01)
    gated.gate.set()
    results = list(await asyncio.gather(*submitted))
    await executor.stop(drain_timeout_s=5)
    return results


def test_queued_work_is_split_among_idle_instances(mlp_backend: OnnxRuntimeBackend, model_name: str) -> None:
    """Two instances (a multi-instance plan) and eight queued rows: two batches of four run at once,
    not one batch of eight beside an idle instance."""
    gated = GatedBackend(mlp_backend)
    requests = [_x(1, seed=i) for i in range(8)]

    results = run(_two_instances(gated, model_name, requests, []))
    assert gated.rows == [4, 4]
    for inputs, result in zip(requests, results, strict=True):
        np.testing.assert_allclose(result["logits"], mlp_backend.infer(inputs)["logits"], rtol=1e-6, atol=1e-6)


def test_an_instance_that_frees_beside_a_busy_one_takes_only_its_share(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    """Two instances, one running a row, six rows queued: the idle one takes four (rows queued and
    running split evenly), and the busy one takes the other two when it frees; not six beside it."""
    gated = GatedBackend(mlp_backend)
    first, queued = _x(1, seed=100), [_x(1, seed=i) for i in range(6)]

    results = run(_two_instances(gated, model_name, [first], queued))
    assert gated.rows == [1, 4, 2]
    for inputs, result in zip([first, *queued], results, strict=True):
        np.testing.assert_allclose(result["logits"], mlp_backend.infer(inputs)["logits"], rtol=1e-6, atol=1e-6)
