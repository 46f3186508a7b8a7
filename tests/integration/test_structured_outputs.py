"""Structured outputs and tool calls on the real server with SmolLM2 (int4), through raw HTTP and the
openai client: constrained decoding (response_format, vLLM's guided_* fields, Triton's generate),
tool_choice none/auto/required/named, streamed tool-call deltas, and tool-call history."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer

from .test_openai_api import llm_registry

pytestmark = pytest.mark.timeout(180)

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 30}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}, "required": []}},
}
WEATHER_NAME = "get_weather"
ARGS = '{"city": "Paris"}'
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = llm_registry(tmp_path_factory.mktemp("structured-home"), smollm2_gguf)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=8, max_model_len=1024)
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture()
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as session:
        yield session


def chat(http: httpx.Client, **fields: object) -> httpx.Response:
    body = {"model": "smollm2", "messages": ASK, "max_tokens": 60, "temperature": 0, **fields}
    return http.post("/v1/chat/completions", json=body)


def test_response_format_json_schema_gives_a_conforming_object(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Invent a person."}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
        temperature=0.8,
        max_tokens=60,
        n=3,
    )
    for choice in answer.choices:
        person = json.loads(choice.message.content or "")
        assert set(person) == {"name", "age"} and isinstance(person["age"], int) and len(person["name"]) <= 20
        assert choice.finish_reason == "stop"


def test_json_object_guided_choice_regex_and_grammar(http: httpx.Client) -> None:
    question = [{"role": "user", "content": "Answer in JSON: what is the capital of France?"}]
    document = chat(http, messages=question, response_format={"type": "json_object"}).json()["choices"][0]
    content = document["message"]["content"]  # SmolLM2 repeats keys until max_tokens: an object, unfinished
    assert content.startswith('{"') and (document["finish_reason"] == "length" or isinstance(json.loads(content), dict))
    choice = chat(http, guided_choice=["sunny", "rainy"], temperature=1.0).json()
    assert choice["choices"][0]["message"]["content"] in {"sunny", "rainy"}
    regex = chat(http, guided_regex=r"\d{3}-[A-Z]{2}").json()
    assert re.fullmatch(r"\d{3}-[A-Z]{2}", regex["choices"][0]["message"]["content"])
    grammar = chat(http, structured_outputs={"grammar": 'root ::= "yes" | "no"'}).json()
    assert grammar["choices"][0]["message"]["content"] in {"yes", "no"}
    lark = chat(http, guided_grammar='start: "It is " /[a-z]{3,8}/ "."').json()
    assert re.fullmatch(r"It is [a-z]{3,8}\.", lark["choices"][0]["message"]["content"])


def test_completions_and_triton_generate_take_constraints(http: httpx.Client) -> None:
    body = {"model": "smollm2", "prompt": "A person as JSON:", "max_tokens": 60, "guided_json": PERSON}
    completion = http.post("/v1/completions", json=body).json()
    assert set(json.loads(completion["choices"][0]["text"])) == {"name", "age"}
    generated = http.post(
        "/v2/models/smollm2/generate",
        json={"text_input": "Is Paris in France?", "parameters": {"max_tokens": 5, "guided_choice": ["yes", "no"]}},
    ).json()
    assert generated["text_output"] in {"yes", "no"}
    refused = http.post(
        "/v2/models/smollm2/generate",
        json={"text_input": "x", "parameters": {"guided_json": {"type": "object", "not": {}}}},
    )
    assert refused.status_code == 400 and "parameters.guided_json" in refused.json()["error"]


def test_a_schema_feature_the_engine_cannot_honour_is_refused_by_name(http: httpx.Client) -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    response = chat(http, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "response_format.json_schema.schema" in message and "uniqueItems" in message
    for fields, named in [
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        ({"guided_choice": []}, "guided_choice"),
        ({"structured_outputs": {"structural_tag": {}}}, "structured_outputs.structural_tag"),
        ({"guided_regex": "[a-z", "response_format": {"type": "json_object"}}, "one structured output"),
        ({"guided_regex": "[a-z"}, "guided_regex"),
        ({"tool_choice": "required"}, "tool_choice needs tools"),
        ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "'nope'"),
    ]:
        refused = chat(http, **fields)
        assert refused.status_code == 400, fields
        assert named in refused.json()["error"]["message"], (fields, refused.text)


def test_required_and_named_tool_choice_force_a_call(client: openai.OpenAI) -> None:
    named = client.chat.completions.create(
        model="smollm2",
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=60,
    )
    choice = named.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    assert isinstance(json.loads(call.function.arguments)["city"], str)
    required = client.chat.completions.create(
        model="smollm2",
        messages=ASK,
        tools=[WEATHER, TIME],
        tool_choice="required",
        parallel_tool_calls=False,
        temperature=0.8,
        max_tokens=60,
    )
    calls = required.choices[0].message.tool_calls
    assert len(calls) == 1 and calls[0].function.name in {"get_weather", "get_time"}


def test_tool_call_deltas_stream_as_openai_sends_them(http: httpx.Client, client: openai.OpenAI) -> None:
    fields = {"tools": [WEATHER], "tool_choice": "required", "stream": True, "temperature": 0}
    body = {"model": "smollm2", "messages": ASK, "max_tokens": 60, **fields}
    with http.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    deltas = [json.loads(line)["choices"][0] for line in lines[:-1]]
    calls = [d["delta"]["tool_calls"][0] for d in deltas if d["delta"].get("tool_calls")]
    first = calls[0]
    assert first["index"] == 0 and first["id"].startswith("call_") and first["type"] == "function"
    assert first["function"] == {"name": "get_weather", "arguments": ""}
    assert all(set(call) == {"index", "function"} and set(call["function"]) == {"arguments"} for call in calls[1:])
    arguments = "".join(call["function"]["arguments"] for call in calls)
    assert isinstance(json.loads(arguments)["city"], str)
    assert deltas[-1]["finish_reason"] == "tool_calls"
    assert not any(d["delta"].get("content") for d in deltas)
    whole = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=60, temperature=0
    )
    assert json.loads(whole.choices[0].message.tool_calls[0].function.arguments) == json.loads(arguments)


def test_auto_parses_hermes_calls_and_history_reaches_the_template(
    client: openai.OpenAI, server: BackgroundServer
) -> None:
    engine = server.plane.llms.get("smollm2").engine
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": WEATHER_NAME, "arguments": ARGS}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees, sunny"},
    ]
    from mcp2026ai.dataplane.generation import Prompt

    prompt = engine.tokenizer.decode(Prompt(messages=tuple(history), tools=(WEATHER,)).token_ids_for(engine.tokenizer))
    assert '"name": "get_weather"' in prompt and "<tools>" in prompt  # the tools, the Hermes way
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in prompt
    assert "<tool_response>\n18 degrees, sunny\n</tool_response>" in prompt
    answer = client.chat.completions.create(model="smollm2", messages=history, tools=[WEATHER], max_tokens=40)
    assert answer.choices[0].finish_reason in {"stop", "length", "tool_calls"}
    none = client.chat.completions.create(
        model="smollm2", messages=ASK, tools=[WEATHER], tool_choice="none", max_tokens=20
    )
    assert none.choices[0].message.tool_calls is None and none.choices[0].message.content
