"""The request flow the data plane wires, on real onnxruntime sessions: a canary that really fails
at run time trips its circuit (its users fall back to stable), then the analysis rolls it back."""

import asyncio
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mcp2026ai.errors import MCPError
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing import (
    AnalysisSpec,
    BreakerBoard,
    BreakerState,
    Outcome,
    RolloutConfig,
    RolloutManager,
    RolloutStore,
    Router,
    RouteReason,
    classify,
    pick_target,
)
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from tests.support.clock import FakeClock


def broken_onnx(path: Path) -> Path:
    """Valid ONNX that fails in onnxruntime for a batch of 2: Reshape of 6 values to (5, -1)."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["logits"]), helper.make_node("Reshape", ["logits", "s"], ["scores"])],
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["rows", "cols"])],
        [
            numpy_helper.from_array(np.ones((4, 3), np.float32), "w"),
            numpy_helper.from_array(np.array([5, -1], np.int64), "s"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))
    return path


def test_failing_canary_falls_back_then_rolls_back(registry: ModelRegistry, clock: FakeClock, tmp_path: Path) -> None:
    registry.register("clf", broken_onnx(tmp_path / "broken.onnx"), version="2.0.0")
    backends = {}
    for version in ("1.0.0", "2.0.0"):
        record = registry.resolve("clf", version)
        backends[version] = OnnxRuntimeBackend(registry.artifact_path(record), record.signature)
        backends[version].load()

    manager = RolloutManager(RolloutStore(registry), clock)
    manager.set(RolloutConfig(name="clf", canary="2.0.0", weight=50, analysis=AnalysisSpec(interval_s=60)))
    router, board = Router(), BreakerBoard(clock)
    inputs = {"x": np.ones((2, 4), np.float32)}

    async def infer(user: str) -> tuple[RouteReason, str, Outcome]:
        request = InferenceRequest(model="clf", inputs=inputs, headers={"x-user-id": user})
        config = manager.config("clf")
        decision = router.route(request, config)
        target = pick_target("clf", decision.version or "1.0.0", config, board)
        assert target.version is not None
        exc: MCPError | None = None
        try:
            await asyncio.to_thread(backends[target.version].infer, request.inputs)
        except MCPError as error:
            exc = error
        outcome = classify(exc)
        board.record(target.model, target.version, outcome is not Outcome.SERVER_ERROR)
        manager.observe("clf", target.version, outcome, latency_ms=1.0)
        return decision.reason, target.version, outcome

    async def traffic(users: range) -> list[tuple[RouteReason, str, Outcome]]:
        return [await infer(f"user-{i}") for i in users]

    first = asyncio.run(traffic(range(200)))
    canary_served = [served for reason, served, _ in first if reason is RouteReason.CANARY]
    assert canary_served[:20] == ["2.0.0"] * 20  # until its circuit opens after 20 failures
    assert set(canary_served[20:]) == {"1.0.0"}  # then its users are served by stable
    assert board.states()[("clf", "2.0.0")] is BreakerState.OPEN
    assert all(outcome is Outcome.OK for _, served, outcome in first if served == "1.0.0")

    clock.advance(60)
    verdict = manager.tick()["clf"]
    assert verdict.rollback and "5xx rate 100.00%" in verdict.reason
    assert RolloutStore(registry).decisions("clf", "rollback")[0]["chosen"] == "clf:1.0.0"

    after = asyncio.run(traffic(range(200, 300)))
    assert {(reason, served, outcome) for reason, served, outcome in after} == {
        (RouteReason.STABLE, "1.0.0", Outcome.OK)
    }
