"""Rollouts for language models (issue 51, item 2), through the tensor routing (routing/), on the real
server with SmolLM2: 1.0.0 in production, 2.0.0 the same GGUF again, 3.0.0 with a contract whose
memory budget cannot hold it.

- ``mcp rollout set --name smollm2 --canary 2.0.0 --weight 25``: the sync loads 2.0.0 beside 1.0.0 and
  400 chats by 400 users split by the ``X-User-Id`` hash: each user's answer names the version its
  bucket chose, 20-30 % the canary;
- a canary that breaks its contract at load (3.0.0) is rolled back within one sync, and ``mcp rollout
  show`` prints the reason; clients see no error meanwhile;
- a rollout naming a version that does not exist is refused in one line.

The ``mcp`` commands run through the CLI's ``main()`` in the test's process: each console script's start
cost seconds of CPU on two shared cores, and the rollback loop ran one per turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mcp2026ai.cli import context
from mcp2026ai.contract import InferenceContract, ResourceSpec
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.routing.router import bucket
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.cli import Outcome, run_main
from tests.support.llm import LLM_CACHE

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]
SYNC_S = 0.5
USERS = 400
CHAT = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("smollm2", smollm2_gguf, version="1.0.0", stage=Stage.PRODUCTION)
        registry.register("smollm2", smollm2_gguf, version="2.0.0")
        too_small = InferenceContract(resources=ResourceSpec(memory_mb=64))
        registry.register("smollm2", smollm2_gguf, version="3.0.0", contract=too_small)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=10,
        sync_interval_s=SYNC_S,
        generation=EngineConfig(max_num_seqs=4, max_model_len=256),
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield running


@pytest.fixture
def mcp(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Outcome]:
    """``mcp ARGS`` on the server's registry, through the CLI's ``main()`` in this process (a console
    script's start costs seconds of CPU here, each call)."""
    monkeypatch.setenv("MCP_HOME", str(server.registry.home))
    monkeypatch.setenv("COLUMNS", "200")
    context.settings.cache_clear()
    return lambda *arguments: run_main(list(arguments), capsys, monkeypatch)


def loaded_versions(server: BackgroundServer) -> set[str]:
    return {served.record.version for served in server.plane.llms.served_versions("smollm2")}


def wait_for(condition: object, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_canary_by_user_hash_then_a_canary_that_cannot_load_is_rolled_back(
    server: BackgroundServer, mcp: Callable[..., Outcome]
) -> None:
    done = mcp("rollout", "set", "--name", "smollm2", "--canary", "2.0.0", "--weight", "25", "--interval", "600")
    assert done.code == 0, done.err
    wait_for(lambda: loaded_versions(server) == {"1.0.0", "2.0.0"}, "the canary was never loaded")
    wait_for(lambda: server.plane.traffic.rollout("smollm2") is not None, "the rollout was never read")

    canary = 0
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as client:
        for user in range(USERS):
            answer = client.post("/v1/chat/completions", json=CHAT, headers={"X-User-Id": f"user-{user}"})
            assert answer.status_code == 200, answer.text
            expected = "2.0.0" if bucket("smollm2", f"user-{user}") < 25 else "1.0.0"
            assert answer.headers["x-model-version"] == expected, user
            canary += expected == "2.0.0"
        assert 0.20 * USERS <= canary <= 0.30 * USERS, canary

        done = mcp("rollout", "set", "--name", "smollm2", "--canary", "3.0.0", "--weight", "25")
        assert done.code == 0, done.err
        deadline = time.monotonic() + 30
        while "failed to load" not in (shown := mcp("rollout", "show", "--name", "smollm2").out):
            assert time.monotonic() < deadline, shown
            answer = client.post("/v1/chat/completions", json=CHAT, headers={"X-User-Id": "user-1"})
            assert answer.status_code == 200, answer.text
    assert "3.0.0" in shown and "memory_mb" in shown, shown
    assert "3.0.0" not in loaded_versions(server)


def test_a_rollout_naming_a_version_that_does_not_exist_is_one_clear_error(
    server: BackgroundServer, mcp: Callable[..., Outcome]
) -> None:
    done = mcp("rollout", "set", "--name", "smollm2", "--canary", "9.9.9", "--weight", "25")
    assert done.code != 0 and "Traceback" not in done.err
    assert "9.9.9" in done.err + done.out
