"""``--reasoning-parser`` on the real server, through the official openai client: ``<think>`` text
is ``message.reasoning_content`` / ``delta.reasoning_content`` and a Responses ``reasoning`` item,
never ``content``; with tools the calls still parse, with ``response_format`` the JSON follows the
reasoning (the grammar applies once ``</think>`` is written). Under ``deepseek_r1`` an answer starts
inside the block; SmolLM2, shown two answers in DeepSeek-R1's form, writes its own the same way."""

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
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def serve(tmp_path_factory: pytest.TempPathFactory, gguf: Path, parser: str) -> Iterator[openai.OpenAI]:
    registry = register_smollm2(tmp_path_factory.mktemp(f"{parser}-home"), gguf)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        generation=EngineConfig(max_num_seqs=2, max_model_len=512),
        reasoning_parser=parser,  # type: ignore[arg-type]
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield openai.OpenAI(base_url=f"http://{running.http_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path) -> Iterator[openai.OpenAI]:
    yield from serve(tmp_path_factory, smollm2_gguf, "qwen3")


@pytest.fixture(scope="module")
def deepseek(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[openai.OpenAI]:
    yield from serve(tmp_path_factory, smollm2_gguf, "deepseek_r1")


FEW_SHOT = [
    {"role": "system", "content": "Answer in the form: <reasoning></think><answer>"},
    {"role": "user", "content": "Capital of Italy?"},
    {"role": "assistant", "content": "Italy's capital is Rome.</think>Rome."},
    {"role": "user", "content": "Capital of Spain?"},
    {"role": "assistant", "content": "Spain's capital is Madrid.</think>Madrid."},
    {"role": "user", "content": "Capital of France?"},
]
"""SmolLM2 does not think by itself; shown two answers in the form, it writes its third the same way."""


def test_reasoning_is_apart_from_content_whole_and_streamed(deepseek: openai.OpenAI) -> None:
    answer = deepseek.chat.completions.create(model="smollm2", messages=FEW_SHOT, max_tokens=30, temperature=0)  # type: ignore[arg-type]
    message = answer.choices[0].message
    assert message.reasoning_content == "France's capital is Paris." and message.content == "Paris."  # type: ignore[attr-defined]
    assert answer.usage is not None and answer.usage.completion_tokens_details is not None
    thought = answer.usage.completion_tokens_details.reasoning_tokens
    assert thought is not None and 0 < thought < answer.usage.completion_tokens  # the answer's tokens are not reasoning
    stream = deepseek.chat.completions.create(
        model="smollm2",
        messages=FEW_SHOT,
        max_tokens=30,
        temperature=0,
        stream=True,  # type: ignore[arg-type]
        stream_options={"include_usage": True},
    )
    reasoning, content, streamed_usage = "", "", None
    for chunk in stream:
        streamed_usage = chunk.usage or streamed_usage
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning += getattr(delta, "reasoning_content", None) or ""
        content += delta.content or ""
    assert (reasoning, content) == ("France's capital is Paris.", "Paris.")
    assert streamed_usage is not None and streamed_usage.completion_tokens_details is not None
    assert streamed_usage.completion_tokens_details.reasoning_tokens == thought
    response = deepseek.responses.create(model="smollm2", input=FEW_SHOT, max_output_tokens=30, temperature=0)  # type: ignore[arg-type]
    assert response.usage is not None and response.usage.output_tokens_details.reasoning_tokens == thought


def test_an_answer_without_reasoning_counts_none(qwen3: openai.OpenAI) -> None:
    answer = qwen3.chat.completions.create(model="smollm2", messages=QUESTION, max_tokens=8, temperature=0)  # type: ignore[arg-type]
    assert answer.usage is not None and answer.usage.completion_tokens_details is not None
    assert answer.usage.completion_tokens_details.reasoning_tokens == 0


def test_response_format_applies_after_the_reasoning(deepseek: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"]}
    answer = deepseek.chat.completions.create(
        model="smollm2",
        messages=FEW_SHOT,  # type: ignore[arg-type]
        max_tokens=40,
        temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}},
    )
    message = answer.choices[0].message
    assert message.reasoning_content == "France's capital is Paris."  # type: ignore[attr-defined]
    assert json.loads(message.content or "") == {"capital": "Paris"}


def test_tool_calls_parse_after_the_reasoning(deepseek: openai.OpenAI) -> None:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    answer = deepseek.chat.completions.create(
        model="smollm2",
        messages=FEW_SHOT,  # type: ignore[arg-type]
        tools=[WEATHER],  # type: ignore[list-item]
        max_tokens=80,
        temperature=0,
        extra_body={"guided_regex": re.escape(call)},
    )
    message = answer.choices[0].message
    assert message.reasoning_content and "</think>" not in message.reasoning_content  # type: ignore[attr-defined]
    assert message.tool_calls and json.loads(message.tool_calls[0].function.arguments) == {"city": "Paris"}
    assert not message.content and answer.choices[0].finish_reason == "tool_calls"


def test_qwen3_answers_without_a_block_are_all_content(qwen3: openai.OpenAI) -> None:
    answer = qwen3.chat.completions.create(model="smollm2", messages=QUESTION, max_tokens=8, temperature=0)  # type: ignore[arg-type]
    message = answer.choices[0].message
    assert message.content and message.reasoning_content is None  # type: ignore[attr-defined]


def test_an_unclosed_block_is_reasoning_and_a_responses_item(deepseek: openai.OpenAI) -> None:
    answer = deepseek.chat.completions.create(model="smollm2", messages=QUESTION, max_tokens=8, temperature=0)  # type: ignore[arg-type]
    message = answer.choices[0].message
    assert message.reasoning_content and message.content == ""  # type: ignore[attr-defined]
    assert answer.usage is not None and answer.usage.completion_tokens_details is not None
    assert answer.usage.completion_tokens_details.reasoning_tokens == answer.usage.completion_tokens == 8
    response = deepseek.responses.create(model="smollm2", input="What is the capital of France?", max_output_tokens=8)
    assert response.output[0].type == "reasoning" and response.output[0].content[0].text  # type: ignore[union-attr]
    events = deepseek.responses.create(
        model="smollm2", input="What is the capital of France?", max_output_tokens=8, stream=True
    )
    kinds = [event.type for event in events]
    assert "response.reasoning_text.delta" in kinds and "response.reasoning_text.done" in kinds
