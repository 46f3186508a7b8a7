"""Canary analysis on a language model's contract figures (issue 51, item 2), on the real server with
SmolLM2: 1.0.0 in production, 2.0.0 the same GGUF with a contract that promises a TTFT p99 of 1 ms.

``mcp rollout set --file`` (canary 2.0.0 at 25 %, analysis every 10 s over at least 5 chats; on 2
shared cores the canary answers about one chat a second): 400 chats by user id;
20-30 % of the users go to the canary until the first analysis window with enough canary chats
judges its TTFT p99 against the contract and rolls it back; ``mcp rollout show`` and ``mcp policy
trace`` print the reason; clients see no more errors than the analysis allows (only the canary's users,
only within the window that judged it), and every later chat is answered by 1.0.0.

The ``mcp`` commands run through the CLI's ``main()`` in the test's process (a console script's start
cost seconds of CPU on two shared cores).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from mcp2026ai.cli import context
from mcp2026ai.contract import GenerationSpec, InferenceContract
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.routing.router import bucket
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.cli import Outcome, run_main
from tests.support.llm import LLM_CACHE

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]
INTERVAL_S = 10.0
USERS = 400
CHAT = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("smollm2", smollm2_gguf, version="1.0.0", stage=Stage.PRODUCTION)
        impossible = InferenceContract(generation=GenerationSpec(ttft_p99_ms=1))
        registry.register("smollm2", smollm2_gguf, version="2.0.0", contract=impossible)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=10,
        sync_interval_s=0.5,
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
    monkeypatch.setenv("COLUMNS", "250")
    context.settings.cache_clear()
    return lambda *arguments: run_main(list(arguments), capsys, monkeypatch)


def wait_for(condition: object, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_a_canary_that_misses_its_ttft_promise_is_rolled_back_within_one_window(
    server: BackgroundServer, mcp: Callable[..., Outcome]
) -> None:
    home = server.registry.home
    loaded = lambda: {served.record.version for served in server.plane.llms.served_versions("smollm2")}  # noqa: E731
    rollout = home / "rollout.yaml"
    rollout.write_text(
        f"name: smollm2\ncanary: 2.0.0\nweight: 25\nanalysis: {{interval_s: {INTERVAL_S:g}, min_requests: 5}}\n"
    )
    done = mcp("rollout", "set", "--file", str(rollout))
    assert done.code == 0, done.err
    wait_for(lambda: loaded() == {"1.0.0", "2.0.0"}, "the canary was never loaded")
    wait_for(lambda: server.plane.traffic.rollout("smollm2") is not None, "the rollout was never read")

    canary_at: list[float] = []
    errors_at: list[float] = []
    canary_users, errors_off_canary = 0, 0
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as client:
        for user in range(USERS):
            answer = client.post("/v1/chat/completions", json=CHAT, headers={"X-User-Id": f"user-{user}"})
            on_canary = bucket("smollm2", f"user-{user}") < 25
            canary_users += on_canary
            if answer.status_code != 200:
                errors_at.append(time.monotonic())
                errors_off_canary += not on_canary
                continue
            if answer.headers["x-model-version"] == "2.0.0":
                canary_at.append(time.monotonic())
    assert 0.20 * USERS <= canary_users <= 0.30 * USERS, canary_users
    assert canary_at, "no chat reached the canary"
    # One analysis window (plus the second-long tick and a sync) from the first canary answer to the last.
    assert canary_at[-1] - canary_at[0] <= INTERVAL_S + 3.0, canary_at[-1] - canary_at[0]
    # Clients saw no more errors than the analysis allows: only the canary's users, and only within the
    # window that judged it (none once it was rolled back).
    assert errors_off_canary == 0, errors_off_canary
    if errors_at:
        first = min(canary_at[0], errors_at[0])
        assert errors_at[-1] - first <= INTERVAL_S + 3.0, (errors_at[-1] - first, len(errors_at))

    shown = mcp("rollout", "show", "--name", "smollm2").out
    assert "2.0.0" in shown and "TTFT p99" in shown and "contract 1 ms" in shown, shown
    traced = mcp("policy", "trace", "--model", "smollm2")
    assert traced.code == 0, traced.err
    assert "rollout decisions for smollm2" in traced.out and "TTFT p99" in traced.out, traced.out
    wait_for(lambda: loaded() == {"1.0.0"}, "the rolled-back canary was never retired")
    print(f"canary answered {len(canary_at)} chats over {canary_at[-1] - canary_at[0]:.1f} s; {len(errors_at)} errors")
