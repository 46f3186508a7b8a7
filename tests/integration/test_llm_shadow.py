"""Shadow for chats (issue 51, item 2), on the real server with SmolLM2 1.0.0 (production) and 2.0.0
(the same GGUF) as the rollout's shadow at 100 %: every chat is answered by 1.0.0 and mirrored to 2.0.0
once its answer is complete (the answer discarded); ``mcp shadow report`` shows per prompt the greedy
token agreement (1.0: the same weights) and the TTFT and ITL deltas."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

from .conftest import mcp_command

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
PROMPTS = ["Hi", "What is the capital of France?", "Count to three."]


def mcp(home: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_HOME": str(home), "COLUMNS": "250"}
    return subprocess.run([*mcp_command(), *arguments], env=env, capture_output=True, text=True, timeout=60)


def test_chats_are_mirrored_to_the_shadow_and_reported_per_prompt(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    home = tmp_path / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("smollm2", smollm2_gguf, version="1.0.0", stage=Stage.PRODUCTION)
        registry.register("smollm2", smollm2_gguf, version="2.0.0")
    done = mcp(home, "rollout", "set", "--name", "smollm2", "--shadow", "2.0.0", "--shadow-percent", "100")
    assert done.returncode == 0, done.stderr
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=10,
        sync_interval_s=0.5,
        generation=EngineConfig(max_num_seqs=2, max_model_len=256),
    )
    with (
        BackgroundServer(registry, ["smollm2"], config) as server,
        httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as client,
    ):
        deadline = time.monotonic() + 60
        while {s.record.version for s in server.plane.llms.served_versions("smollm2")} != {"1.0.0", "2.0.0"}:
            assert time.monotonic() < deadline, "the shadow was never loaded"
            time.sleep(0.1)
        mirror = server.plane.generation.shadows
        for prompt in PROMPTS * 2:
            body = {"model": "smollm2", "messages": [{"role": "user", "content": prompt}],
                    "max_tokens": 6, "temperature": 0}  # fmt: skip
            answer = client.post("/v1/chat/completions", json=body)
            assert answer.status_code == 200, answer.text
            assert answer.headers["x-model-version"] == "1.0.0"  # the shadow's answer is discarded
            while mirror._tasks:
                assert time.monotonic() < deadline + 60
                time.sleep(0.05)
        rows: list[dict[str, object]] = []
        while len(rows) < len(PROMPTS) or any(row["requests"] != 2 for row in rows):
            assert time.monotonic() < deadline + 90, rows
            time.sleep(0.5)  # the sync writes the statistics every interval
            report = mcp(home, "shadow", "report", "--name", "smollm2", "--json")
            assert report.returncode == 0, report.stderr
            rows = [row for row in json.loads(report.stdout) if row.get("kind") == "chat"]
    for row in rows:
        assert row["primary"] == "1.0.0" and row["shadow"] == "2.0.0"
        assert row["token_agreement"] == 1.0 and row["identical_rate"] == 1.0, row
        assert isinstance(row["ttft_delta_ms_mean"], float) and isinstance(row["itl_delta_ms_mean"], float), row
        assert row["shadow_error_rate"] == 0.0 and row["dropped"] == 0
    shown = mcp(home, "shadow", "report", "--name", "smollm2").stdout
    assert "chat shadow diffs of smollm2, per prompt" in shown and "token_agreement" in shown, shown
