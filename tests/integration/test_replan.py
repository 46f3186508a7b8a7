"""Run-time re-planning: p99 over budget for N windows -> logged decision, plan swapped, no failed request."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from mcp2026ai.app import build_plane
from mcp2026ai.contract import parse_contract
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.replan import ReplanPolicy
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.serving.replanning import ReplanSupervisor
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(180)
BODY = {"inputs": [{"name": "x", "shape": [2, 16], "datatype": "FP32", "data": [0.5] * 32}]}


@pytest.mark.parametrize("off_loop", [False, True], ids=["on-loop", "worker-thread"])
def test_violated_contract_replans_and_swaps_without_failures(tmp_path: Path, off_loop: bool) -> None:
    registry = ModelRegistry(tmp_path / "home")
    contract = parse_contract({"latency": {"p99_ms": 50}, "batching": {"max_batch_size": 8}})
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"), contract=contract)
    config = ServerConfig(http_port=0, grpc_port=0, plan_with_policy=True, sync_interval_s=60)
    plane = build_plane(registry, ["mlp"], config)
    with BackgroundServer(registry, ["mlp"], config, plane=plane) as server:
        supervisor = ReplanSupervisor(
            plane.models, PolicyOrchestrator(registry), ReplanPolicy(consecutive_windows=2, cooldown_s=0)
        )
        original = plane.models.get("mlp")
        served_codes = []

        async def window(observed_ms: float) -> list[object]:
            for _ in range(30):  # the window's observed end-to-end latencies, as serving would record them
                original.stats.record_success(1, int(observed_ms * 1e6))
            # the serving sync calls observe(): the windows are judged on a worker thread
            decisions = await supervisor.observe() if off_loop else supervisor.observe_windows()
            await supervisor.wait_swaps()
            return list(decisions)

        with httpx.Client(base_url=f"http://{server.http_url}") as client:
            assert server.call(window(80.0)) == []  # one window over budget: not yet
            served_codes.append(client.post("/v2/models/mlp/infer", json=BODY).status_code)
            decisions = server.call(window(80.0))
            for _ in range(20):
                served_codes.append(client.post("/v2/models/mlp/infer", json=BODY).status_code)
        assert len(decisions) == 1
        decision = decisions[0]
        assert decision.trigger == "replan"  # type: ignore[attr-defined]
        assert "observed p99 80" in decision.reason  # type: ignore[attr-defined]
        assert plane.models.get("mlp") is not original, "the re-planned backend was swapped in"
        assert set(served_codes) == {200}
        trace = PolicyOrchestrator(registry).decisions("mlp")
        assert [d.trigger for d in trace][-1] == "replan"
