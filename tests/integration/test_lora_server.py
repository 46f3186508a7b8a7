"""LoRA adapters on the real server with SmolLM2 (int4), through the openai client and raw HTTP.

The base model and the adapter ``smollm2-sql`` are served from the start (``--max-loras 3
--max-lora-rank 8``, batch invariance ``auto``: answers are compared across batch compositions);
``smollm2-poet`` is loaded at run time from an allowed folder with vLLM's ``/v1/load_lora_adapter``.
Eight concurrent streams over the base and both adapters each equal their answers alone; ``/v1/models``
lists the adapters with their ``parent``; bad input gets one clear 400 or 404 each; a new adapter
version promoted to production is served in place of the old one, and a canary adapter version splits
chats by the ``X-User-Id`` hash (rollouts route adapters like any version)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.routing.router import bucket
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.integration.conftest import mcp_command
from tests.support.llm import LLM_CACHE
from tests.support.lora import PROMPTS, make_adapter

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TOKENS = 20
SYNC_S = 0.5


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, smollm2_hf: Path) -> dict[str, Path]:
    allowed = tmp_path_factory.mktemp("allowed")
    outside = tmp_path_factory.mktemp("outside")
    return {
        "allowed": allowed,
        "sql": make_adapter(smollm2_hf, outside / "sql", seed=1),
        "sql-v2": make_adapter(smollm2_hf, outside / "sql-v2", seed=3),
        "poet": make_adapter(smollm2_hf, allowed / "poet", seed=2),
        "wide": make_adapter(smollm2_hf, allowed / "wide", seed=4, rank=16),
    }


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path, folders: dict[str, Path]
) -> Iterator[BackgroundServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(tmp_path_factory.mktemp("lora-home"))
        base = registry.register("smollm2", smollm2_gguf)
        registry.register("smollm2-sql", folders["sql"], base=base, version="1.0.0", stage=Stage.PRODUCTION)
    generation = EngineConfig(
        max_num_seqs=8, max_model_len=512, max_loras=3, max_lora_rank=8, batch_invariance=BatchInvariance.AUTO
    )
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        sync_interval_s=SYNC_S,
        generation=generation,
        lora_allowed_dirs=[folders["allowed"]],
    )
    with BackgroundServer(registry, ["smollm2", "smollm2-sql"], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture()
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=120) as session:
        yield session


def load(http: httpx.Client, name: str, path: Path | str, **extra: str) -> httpx.Response:
    return http.post("/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(path), **extra})


def answer(client: openai.OpenAI, model: str, text: str, stream: bool = False) -> str:
    messages = [{"role": "user", "content": text}]
    if not stream:
        reply = client.chat.completions.create(model=model, messages=messages, max_tokens=TOKENS, temperature=0)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""
    chunks = client.chat.completions.create(
        model=model,
        messages=messages,  # type: ignore[arg-type]
        max_tokens=TOKENS,
        temperature=0,
        stream=True,
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


def test_eight_streams_over_the_base_and_two_adapters_equal_their_answers_alone(
    client: openai.OpenAI, http: httpx.Client, folders: dict[str, Path]
) -> None:
    assert load(http, "smollm2-poet", folders["poet"]).status_code == 200
    work = [(model, PROMPTS[i]) for i, model in enumerate(["smollm2", "smollm2-sql", "smollm2-poet"] * 3)][:8]
    alone = [answer(client, model, text) for model, text in work]
    with ThreadPoolExecutor(len(work)) as pool:
        together = list(pool.map(lambda job: answer(client, job[0], job[1], stream=True), work))
    assert together == alone
    same_prompt = PROMPTS[1]  # the adapters do change the answer
    assert len({answer(client, model, same_prompt) for model in ("smollm2", "smollm2-sql", "smollm2-poet")}) == 3


def test_models_lists_the_adapters_with_their_parent_and_they_load_and_unload_at_run_time(
    client: openai.OpenAI, http: httpx.Client, folders: dict[str, Path]
) -> None:
    assert load(http, "smollm2-poet", folders["poet"]).status_code == 200  # again: the same version, reused
    listed = {entry["id"]: entry for entry in http.get("/v1/models").json()["data"]}
    assert listed["smollm2"]["parent"] is None
    assert listed["smollm2-sql"]["parent"] == "smollm2" and listed["smollm2-poet"]["parent"] == "smollm2"
    assert {model.id for model in client.models.list()} >= {"smollm2", "smollm2-sql", "smollm2-poet"}
    before = answer(client, "smollm2-poet", PROMPTS[3])
    unloaded = http.post("/v1/unload_lora_adapter", json={"lora_name": "smollm2-poet"})
    assert unloaded.status_code == 200, unloaded.text
    with pytest.raises(openai.NotFoundError):
        answer(client, "smollm2-poet", PROMPTS[3])
    assert "smollm2-poet" not in {entry["id"] for entry in http.get("/v1/models").json()["data"]}
    assert load(http, "smollm2-poet", folders["poet"]).status_code == 200  # its slot was given back
    assert answer(client, "smollm2-poet", PROMPTS[3]) == before


def error_of(response: httpx.Response) -> str:
    return str(response.json()["error"]["message"])


def test_bad_input_gets_one_clear_error_each(http: httpx.Client, folders: dict[str, Path], tmp_path: Path) -> None:
    chat = {"model": "smollm2-nope", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    assert http.post("/v1/chat/completions", json=chat).status_code == 404
    unknown = http.post("/v1/unload_lora_adapter", json={"lora_name": "smollm2-nope"})
    assert unknown.status_code == 404 and "not loaded" in error_of(unknown)
    wide = load(http, "smollm2-wide", folders["wide"])
    assert wide.status_code == 400 and "adapter rank 16 is over the limit --max-lora-rank 8" in error_of(wide)
    outside = load(http, "smollm2-sql2", folders["sql"])
    assert outside.status_code == 400 and "outside the folders" in error_of(outside)
    sneaky = load(http, "smollm2-sql2", f"{folders['allowed']}/../{folders['sql'].parent.name}/sql")
    assert sneaky.status_code == 400 and "outside the folders" in error_of(sneaky)
    other_base = folders["allowed"] / "other-base"
    if not other_base.exists():
        shutil.copytree(folders["poet"], other_base)
        config = other_base / "adapter_config.json"
        config.write_text(config.read_text().replace('"LlamaForCausalLM"', '"Gemma3ForCausalLM"'))
    wrong = load(http, "smollm2-gemma", other_base)
    assert wrong.status_code == 400 and "made for Gemma3ForCausalLM, the base model is a llama" in error_of(wrong)
    base = load(http, "smollm2", folders["poet"])
    assert base.status_code == 400 and "is a served base model" in error_of(base)
    missing = http.post("/v1/load_lora_adapter", json={"lora_name": "x"})
    assert missing.status_code == 400 and "lora_path" in error_of(missing)


def test_a_new_adapter_version_promoted_to_production_is_served_in_its_place(
    server: BackgroundServer, client: openai.OpenAI, http: httpx.Client, folders: dict[str, Path]
) -> None:

    registry = server.registry
    old = answer(client, "smollm2-sql", PROMPTS[6])
    base = registry.resolve("smollm2")
    registry.register("smollm2-sql", folders["sql-v2"], base=base, version="2.0.0", max_lora_rank=8)
    registry.promote("smollm2-sql", "2.0.0", Stage.PRODUCTION)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        reply = http.post(
            "/v1/chat/completions",
            json={
                "model": "smollm2-sql",
                "messages": [{"role": "user", "content": PROMPTS[6]}],
                "max_tokens": TOKENS,
                "temperature": 0,
            },
        )
        if reply.headers.get("x-model-version") == "2.0.0":
            break
        time.sleep(SYNC_S)
    assert reply.headers.get("x-model-version") == "2.0.0"
    assert reply.json()["choices"][0]["message"]["content"] != old


def test_an_adapter_canary_splits_chats_by_the_user_hash(
    server: BackgroundServer, http: httpx.Client, folders: dict[str, Path]
) -> None:
    """``mcp rollout set --name smollm2-sql --canary 3.0.0 --weight 25``: the sync loads the canary adapter
    version beside the default one and chats split by the ``X-User-Id`` hash, as for any version."""
    registry = server.registry
    registry.register("smollm2-sql", folders["sql"], base=registry.resolve("smollm2"), version="3.0.0")
    env = {**os.environ, "MCP_HOME": str(registry.home), "COLUMNS": "200"}
    command = [*mcp_command(), "rollout", "set", "--name", "smollm2-sql", "--canary", "3.0.0", "--weight", "25"]
    done = subprocess.run([*command, "--interval", "600"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    chat = {"model": "smollm2-sql", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    deadline = time.monotonic() + 60
    canary_user = next(f"user-{n}" for n in range(1000) if bucket("smollm2-sql", f"user-{n}") < 25)
    while True:  # until the sync has loaded the canary and read the rollout
        probe = http.post("/v1/chat/completions", json=chat, headers={"X-User-Id": canary_user})
        if probe.headers.get("x-model-version") == "3.0.0":
            break
        assert time.monotonic() < deadline, (probe.status_code, probe.headers.get("x-model-version"))
        time.sleep(SYNC_S)
    users = 40
    canary = 0
    for user in range(users):
        reply = http.post("/v1/chat/completions", json=chat, headers={"X-User-Id": f"user-{user}"})
        assert reply.status_code == 200, reply.text
        expected_canary = bucket("smollm2-sql", f"user-{user}") < 25
        assert (reply.headers["x-model-version"] == "3.0.0") == expected_canary, user
        canary += expected_canary
    assert 0 < canary < users
