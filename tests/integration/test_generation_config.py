"""`mcp-config.yaml` on the real server with SmolLM2: its parameters are per-model defaults that
requests override, a changed file is re-applied without breaking a running stream, and the CLI
refuses an unknown model id with the registered ones."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
import yaml

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.cli import run_main
from tests.support.llm import register_smollm2

pytestmark = pytest.mark.timeout(180)

STORY = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]


def write_config(path: Path, **parameters: object) -> None:
    path.write_text(yaml.safe_dump({"model": "smollm2", "inference": {"parameters": parameters}}))


@dataclass
class Served:
    server: BackgroundServer
    client: openai.OpenAI
    config: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("llm-config")
    registry = register_smollm2(root / "home", smollm2_gguf)
    config_file = root / "mcp-config.yaml"
    write_config(config_file, temperature=0, max_new_tokens=6)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        generation=EngineConfig(max_num_seqs=4, max_model_len=512),
        generation_configs=[config_file],
    )
    with BackgroundServer(registry, ["smollm2"], config) as server:
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
        yield Served(server, client, config_file)


def chat(client: openai.OpenAI, **fields: object) -> tuple[str, int, str]:
    answer = client.chat.completions.create(model="smollm2", messages=STORY, **fields)  # type: ignore[call-overload]
    choice = answer.choices[0]
    return choice.message.content or "", answer.usage.completion_tokens, choice.finish_reason


def wait_until_applied(served: Served, tokens: int) -> None:
    deadline = time.monotonic() + 5
    while chat(served.client)[1:] != (tokens, "length"):
        assert time.monotonic() < deadline, f"the config giving {tokens} tokens was not applied within 5 s"
        time.sleep(0.1)


def test_config_parameters_are_defaults_that_requests_override(served: Served) -> None:
    text, tokens, reason = chat(served.client)
    assert (tokens, reason) == (6, "length")  # max_new_tokens from the config
    assert chat(served.client)[0] == text  # temperature 0 from the config: greedy, the same answer
    assert chat(served.client, max_tokens=3)[1] == 3  # the request's own max_tokens wins
    completion = served.client.completions.create(model="smollm2", prompt="Once upon a time")
    assert completion.usage.completion_tokens == 6  # not OpenAI's 16: the model's default


def test_a_changed_config_applies_to_new_requests_and_running_streams_finish(served: Served) -> None:
    greedy, _, _ = chat(served.client, max_tokens=12)
    stop_word = greedy.split()[3]
    stream = served.client.chat.completions.create(
        model="smollm2", messages=STORY, max_tokens=60, stream=True, stream_options={"include_usage": True}
    )
    chunks = iter(stream)
    first = next(chunks)
    try:
        write_config(served.config, temperature=0, max_new_tokens=12, stop_sequences=[stop_word])
        deadline = time.monotonic() + 5
        while chat(served.client)[2] != "stop":
            assert time.monotonic() < deadline, "the changed config was not applied within 5 s"
            time.sleep(0.1)
        text, _, reason = chat(served.client)
        assert reason == "stop" and stop_word not in text and greedy.startswith(text.rstrip())
        rest = list(chunks)  # the stream started before the change runs to its own end
        assert first.choices and rest[-1].usage is not None and rest[-1].usage.completion_tokens == 60
    finally:
        write_config(served.config, temperature=0, max_new_tokens=6)


def test_an_invalid_edit_keeps_the_previous_defaults(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    wait_until_applied(served, 6)
    served.config.write_text("model: smollm2\ninference: {parameters: {temperature: 9}}\n")
    try:
        time.sleep(0.8)  # several watch intervals
        assert chat(served.client)[1] == 6
        assert any("not applied, the previous defaults stay" in r.getMessage() for r in caplog.records)
    finally:
        write_config(served.config, temperature=0, max_new_tokens=6)


def test_register_config_stores_defaults_and_refuses_unknown_models(
    tmp_path: Path,
    smollm2_gguf: Path,
    smollm2_int4: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    registry: ModelRegistry = register_smollm2(home, smollm2_gguf)
    monkeypatch.setenv("MCP_HOME", str(home))
    seed = tmp_path / "seed.yaml"
    seed.write_text("model: qwen2-7b-instruct\ninference: {parameters: {temperature: 0.3}}\n")
    refused = run_main(["model", "register", "--config", str(seed)], capsys, monkeypatch)
    assert refused.code != 0 and "'qwen2-7b-instruct' is not registered (registered: smollm2)" in refused.err
    served = run_main(["serve", "--config", str(seed), "--port", "0"], capsys, monkeypatch)
    assert served.code != 0 and "registered: smollm2" in served.err
    mine = tmp_path / "mcp-config.yaml"
    mine.write_text("model: smollm2\ninference: {parameters: {max_new_tokens: 4}}\nresources: {gpu_memory_gb: 16}\n")
    stored = run_main(["model", "register", "--config", str(mine)], capsys, monkeypatch)
    assert stored.code == 0, stored.err
    assert "'max_new_tokens': 4" in stored.out and "gpu_memory_gb: 16 is ignored" in stored.out
    config = ServerConfig(http_port=0, grpc_port=None, generation=EngineConfig(max_num_seqs=2, max_model_len=256))
    with BackgroundServer(registry, ["smollm2"], config) as server:  # no --config: the stored one applies
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
        assert chat(client)[1] == 4
