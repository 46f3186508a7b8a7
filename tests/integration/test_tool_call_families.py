"""Tool calls in each family's own format, through the real server and the official openai client:
SmolLM2 is forced (``guided_regex``) to write exactly what a Hermes/Qwen, Llama 3.x, Mistral, Qwen3-Coder
or pythonic model writes, and ``--tool-call-parser`` reads it as that family's parser does (vLLM's flag),
whole and streamed; the OpenAI Agents SDK runs each family's call as a call of its function tool."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import register_smollm2

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
OUTPUTS = {
    "hermes": 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}'
    "\n</tool_call>",
    "llama3_json": 'Checking. {"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}',
    "mistral": 'Checking.[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]',
    "qwen3_coder": "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
    "pythonic": 'Checking. [get_weather(city="Paris", days=2)]',
}
"""What each family writes for one call (content first, where the format allows it)."""
CONTENT = {"llama3_json": OUTPUTS["llama3_json"], "pythonic": OUTPUTS["pythonic"]}
"""Formats whose calls only count at the start of an answer: there the whole text stays content."""


@pytest.fixture(scope="module", params=sorted(OUTPUTS))
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def client(
    family: str, tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[openai.OpenAI]:
    registry = register_smollm2(tmp_path_factory.mktemp(f"{family}-home"), smollm2_gguf)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        generation=EngineConfig(max_num_seqs=2, max_model_len=512),
        tool_call_parser=family,
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield openai.OpenAI(base_url=f"http://{running.http_url}/v1", api_key="unused", max_retries=0)


def forced(client: openai.OpenAI, text: str, stream: bool) -> object:
    return client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "What is the weather in Paris for two days?"}],
        tools=TOOLS,  # type: ignore[arg-type]
        max_tokens=120,
        temperature=0,
        stream=stream,
        extra_body={"guided_regex": re.escape(text)},
    )


def test_the_family_s_call_reaches_the_client_whole_and_streamed(client: openai.OpenAI, family: str) -> None:
    text = OUTPUTS[family]
    if family in CONTENT:
        text = text.removeprefix("Checking. ")
    answer = forced(client, text, stream=False)
    message = answer.choices[0].message  # type: ignore[attr-defined]
    assert answer.choices[0].finish_reason == "tool_calls"  # type: ignore[attr-defined]
    (call,) = message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris", "days": 2}
    assert (message.content or "").strip() in ("", "Checking.")

    calls: dict[int, dict[str, str]] = {}
    content = ""
    for chunk in forced(client, text, stream=True):  # type: ignore[attr-defined]
        for delta_call in chunk.choices[0].delta.tool_calls or []:
            entry = calls.setdefault(delta_call.index, {"name": "", "arguments": ""})
            entry["name"] += delta_call.function.name or ""
            entry["arguments"] += delta_call.function.arguments or ""
        content += chunk.choices[0].delta.content or ""
        reason = chunk.choices[0].finish_reason
    assert reason == "tool_calls" and content.strip() == (message.content or "").strip()
    assert [(entry["name"], json.loads(entry["arguments"])) for entry in calls.values()] == [
        ("get_weather", {"city": "Paris", "days": 2})
    ]


def test_text_that_is_not_a_call_stays_content(client: openai.OpenAI, family: str) -> None:
    text = CONTENT.get(family, "It is sunny [as usual] {today}.")
    answer = forced(client, text, stream=False)
    assert answer.choices[0].message.content == text  # type: ignore[attr-defined]
    assert not answer.choices[0].message.tool_calls and answer.choices[0].finish_reason == "stop"  # type: ignore[attr-defined]


def test_the_agents_sdk_runs_the_family_s_call(client: openai.OpenAI, family: str) -> None:
    """The OpenAI Agents SDK, unchanged, on its chat-completions model: it reads the family's call as a
    call to its function tool, runs the tool with the parsed arguments, and stops there."""
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    seen: list[tuple[str, int]] = []

    @function_tool
    def get_weather(city: str, days: int) -> str:
        """The weather in a city."""
        seen.append((city, days))
        return f"sunny in {city} for {days} days"

    text = OUTPUTS[family].removeprefix("Checking. ") if family in CONTENT else OUTPUTS[family]
    agent = Agent(
        name="weather",
        instructions="Use the tool.",
        tools=[get_weather],
        tool_use_behavior="stop_on_first_tool",
        model=OpenAIChatCompletionsModel(
            model="smollm2",
            openai_client=openai.AsyncOpenAI(base_url=str(client.base_url), api_key="unused", max_retries=0),
        ),
        model_settings=ModelSettings(temperature=0, max_tokens=120, extra_body={"guided_regex": re.escape(text)}),
    )
    result = Runner.run_sync(agent, "What is the weather in Paris for two days?", max_turns=2)
    assert seen == [("Paris", 2)] and result.final_output == "sunny in Paris for 2 days"
