"""OpenAI's Responses API (stateless) on the real server with SmolLM2 (int4), through the openai
client's ``responses.create``, streamed and not, and raw HTTP for the refusals."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.openai.responses_request import HARMLESS, REFUSED, ResponsesRequest
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import register_smollm2

pytestmark = pytest.mark.timeout(180)
MODEL = "smollm2"
EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
]
CLOSING = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = register_smollm2(tmp_path_factory.mktemp("llm-home"), smollm2_gguf)
    generation = EngineConfig(max_num_seqs=4, max_model_len=512)
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, generation=generation)
    with BackgroundServer(registry, [MODEL], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def test_a_response_answers_input_under_instructions(client: openai.OpenAI, server: BackgroundServer) -> None:
    answer = client.responses.create(
        model=MODEL,
        instructions="You answer with one word.",
        input="What is the capital of France?",
        max_output_tokens=12,
        temperature=0,
    )
    assert answer.object == "response" and answer.status in ("completed", "incomplete")
    assert "Paris" in answer.output_text and answer.output[0].type == "message"
    assert answer.usage is not None and answer.usage.output_tokens <= 12
    tokenizer = server.plane.llms.get(MODEL).engine.tokenizer
    turns = [
        {"role": "system", "content": "You answer with one word."},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    expected = len(tokenizer.encode(tokenizer.apply_chat_template(turns), add_special_tokens=False))
    assert answer.usage.input_tokens == expected


def test_a_message_list_and_a_cut_answer(client: openai.OpenAI) -> None:
    answer = client.responses.create(
        model=MODEL,
        input=[
            {"role": "user", "content": "Count from one to twenty."},
            {"role": "assistant", "content": [{"type": "output_text", "text": "one, two,"}]},
            {"role": "user", "content": [{"type": "input_text", "text": "Go on."}]},
        ],
        max_output_tokens=3,
        temperature=0,
    )
    assert answer.status == "incomplete" and answer.incomplete_details is not None
    assert answer.incomplete_details.reason == "max_output_tokens" and answer.usage and answer.usage.output_tokens == 3


def test_the_stream_is_openai_s_event_sequence(client: openai.OpenAI) -> None:
    question = "What is the capital of France?"
    whole = client.responses.create(model=MODEL, input=question, max_output_tokens=16, temperature=0)
    events = list(
        client.responses.create(model=MODEL, input=question, max_output_tokens=16, temperature=0, stream=True)
    )
    kinds = [event.type for event in events]
    assert (
        kinds[:4] == EVENTS and kinds[-4:-1] == CLOSING and kinds[-1] in ("response.completed", "response.incomplete")
    )
    assert set(kinds[4:-4]) == {"response.output_text.delta"}
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")  # type: ignore[union-attr]
    assert deltas == whole.output_text == events[-4].text  # type: ignore[union-attr]
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == deltas and final.usage and final.usage.output_tokens == whole.usage.output_tokens  # type: ignore[union-attr]


REFUSAL_VALUES: dict[str, Any] = {
    "previous_response_id": "resp_123",
    "conversation": "conv_123",
    "tools": [{"type": "web_search"}],
    "max_tool_calls": 2,
    "background": True,
    "include": ["message.output_text.logprobs"],
    "prompt": {"id": "pmpt_1"},
    "reasoning": {"effort": "low"},
    "metadata": {"k": "v"},
    "top_logprobs": 2,
    "truncation": "auto",
    "context_management": [{"type": "compaction"}],
    "image": {"size": "auto"},
    "moderation": {"mode": "on"},
    "access_programs": {"cyber": "standard"},
    "prompt_cache_options": {"mode": "auto"},
    "prompt_cache_retention": "24h",
    "background_options": {},
    "store": True,
    "text": {"format": {"type": "json_object"}},
}
PLUMBING = {"self", "extra_headers", "extra_query", "extra_body", "timeout"}


def test_every_create_parameter_is_honoured_or_refused_by_name(client: openai.OpenAI) -> None:
    parameters = set(inspect.signature(client.responses.create).parameters) - PLUMBING
    honoured = set(ResponsesRequest.model_fields)  # tools, tool_choice, parallel_tool_calls: tested below
    unclassified = parameters - honoured - set(REFUSED)
    assert not unclassified, f"classify these new openai parameters: {sorted(unclassified)}"
    assert set(REFUSED) | {"store", "text", "tools"} <= set(REFUSAL_VALUES)
    for name, value in REFUSAL_VALUES.items():
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model=MODEL, input="Hi", max_output_tokens=1, extra_body={name: value})
        assert raised.value.param == name, (name, raised.value)
    for name, values in HARMLESS.items():
        client.responses.create(model=MODEL, input="Hi", max_output_tokens=1, extra_body={name: values[0]})
    for name, value in {"user": "u", "safety_identifier": "s", "prompt_cache_key": "k", "service_tier": "flex"}.items():
        client.responses.create(model=MODEL, input="Hi", max_output_tokens=1, extra_body={name: value})


def test_bad_input_is_a_400_naming_it(server: BackgroundServer) -> None:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as http:
        for body in (
            {"model": MODEL, "input": [{"type": "web_search_call", "id": "ws_1", "status": "completed"}]},
            {"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            {"model": MODEL, "input": []},
        ):
            answer = http.post("/v1/responses", json=body)
            assert answer.status_code == 400 and answer.json()["error"]["param"] == "input", answer.text
        over = http.post("/v1/responses", json={"model": MODEL, "input": "hi " * 600})
        assert over.status_code == 400 and over.json()["error"]["code"] == "context_length_exceeded"


def test_vllm_metric_names_are_opt_in(server: BackgroundServer) -> None:
    with httpx.Client(base_url=f"http://{server.http_url}") as http:
        assert "vllm:" not in http.get("/metrics").text


WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_a_forced_function_call_is_a_function_call_item(client: openai.OpenAI) -> None:
    question = "What is the weather in Paris?"
    answer = client.responses.create(
        model=MODEL, input=question, tools=[WEATHER], tool_choice="required", max_output_tokens=60, temperature=0
    )  # type: ignore[list-item]
    calls = [item for item in answer.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"  # type: ignore[union-attr]
    assert isinstance(json.loads(calls[0].arguments)["city"], str)  # type: ignore[union-attr]
    events = list(
        client.responses.create(
            model=MODEL, input=question, tools=[WEATHER], tool_choice="required", max_output_tokens=60,
            temperature=0, stream=True,
        )  # type: ignore[list-item]
    )  # fmt: skip
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.done" in kinds
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == calls[0].arguments  # type: ignore[union-attr]
    assert [event.sequence_number for event in events] == list(range(len(events)))


def test_a_call_and_its_output_in_the_history_reach_the_model(client: openai.OpenAI) -> None:
    answer = client.responses.create(
        model=MODEL,
        input=[
            {"role": "user", "content": "What is the weather in Paris?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 24 degrees."},
        ],
        tools=[WEATHER],  # type: ignore[list-item]
        tool_choice="none",
        max_output_tokens=24,
        temperature=0,
    )
    assert answer.output_text and answer.usage is not None
