"""A model's own sampling defaults on the real server: a converted folder with ``generation_config.json``
(as the converter writes it from the source's) is served with those defaults under every request that
leaves a setting out, ``/v1/models`` shows them, and ``generation_config="none"`` (``mcp serve
--generation-config none``) turns them off."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
OWN = {"temperature": 0.0, "top_k": 1, "repetition_penalty": 1.3}
QUESTION = [{"role": "user", "content": "Give me three short tips for writing clean Python code."}]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, smollm2_int4: Path) -> Path:
    """A conversion cache whose SmolLM2 folder carries sampling defaults (files linked, not copied)."""
    root = tmp_path_factory.mktemp("llm-cache")
    shutil.copytree(smollm2_int4, root / smollm2_int4.name, copy_function=_link)
    (root / smollm2_int4.name / "generation_config.json").write_text(json.dumps(OWN))
    return root


def _link(source: str, target: str) -> None:
    Path(target).hardlink_to(source)


def serve(home: Path, gguf: Path, cache: Path, mode: str) -> Iterator[BackgroundServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(cache))
        registry = ModelRegistry(home)
        registry.register("smollm2", gguf)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        generation=EngineConfig(max_num_seqs=2, max_model_len=512),
        generation_config=mode,  # type: ignore[arg-type]
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield running


@pytest.fixture(scope="module")
def auto(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, cache: Path) -> Iterator[BackgroundServer]:
    yield from serve(tmp_path_factory.mktemp("auto"), smollm2_gguf, cache, "auto")


@pytest.fixture(scope="module")
def off(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, cache: Path) -> Iterator[BackgroundServer]:
    yield from serve(tmp_path_factory.mktemp("none"), smollm2_gguf, cache, "none")


def models(server: BackgroundServer) -> dict[str, object]:
    with httpx.Client(base_url=f"http://{server.http_url}") as http:
        return dict(http.get("/v1/models").json()["data"][0])


def test_requests_that_leave_a_setting_out_get_the_model_s(auto: BackgroundServer) -> None:
    assert models(auto)["sampling_defaults"] == OWN
    client = openai.OpenAI(base_url=f"http://{auto.http_url}/v1", api_key="unused", max_retries=0)
    own = client.chat.completions.create(model="smollm2", messages=QUESTION, max_tokens=40, n=2)  # type: ignore[arg-type]
    assert own.choices[0].message.content == own.choices[1].message.content  # greedy: the model's temperature 0
    explicit = client.chat.completions.create(
        model="smollm2",
        messages=QUESTION,  # type: ignore[arg-type]
        max_tokens=40,
        temperature=0,
        extra_body={"top_k": 1, "repetition_penalty": 1.3},
    )
    assert own.choices[0].message.content == explicit.choices[0].message.content


def test_generation_config_none_turns_them_off(off: BackgroundServer) -> None:
    assert models(off)["sampling_defaults"] == {}
