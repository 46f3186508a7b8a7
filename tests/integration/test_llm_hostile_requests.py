"""Hostile text-generation requests against the real server with SmolLM2 (int4): each is refused with a
400 (413 for the body) naming the field or the limit, before it costs anything; never a 5xx, a hang or
a dropped connection (issue 38, findings 2-4 of ../shared/llm-reliability-findings.md).

One server for the module, with small limits so that every accepted request stays cheap.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.serving.limits import GenerationLimits
from mcp2026ai.testing import BackgroundServer

from .test_openai_api import llm_registry

pytestmark = pytest.mark.timeout(300)
LIMITS = GenerationLimits(
    max_body_bytes=256 << 10,
    max_messages=64,
    max_prompt_chars=4096,
    max_tokens=8,
    default_max_tokens=6,
    max_stop_strings=4,
    max_stop_chars=32,
)
CHAT = "/v1/chat/completions"
GOOD = {"model": "smollm2", "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 2, "temperature": 0}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = llm_registry(tmp_path_factory.mktemp("llm-home"), smollm2_gguf)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        generation=EngineConfig(max_num_seqs=4, max_model_len=256),
        generation_limits=LIMITS,
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield running


@pytest.fixture(scope="module")
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=30) as session:
        yield session


def chat(**changes: Any) -> dict[str, Any]:
    return {**GOOD, **changes}


def refused(http: httpx.Client, body: Any, path: str = CHAT, status: int = 400) -> dict[str, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = http.post(path, content=raw, headers={"content-type": "application/json"})
    assert answer.status_code == status, (body if not isinstance(body, bytes) else body[:80], answer.text[:300])
    document: dict[str, Any] = answer.json()
    return document["error"]


# --- finding 4: garbage that was answered 200 ---------------------------------------------------

GARBAGE = [
    (chat(max_tokens="3"), "max_tokens"),
    (chat(max_tokens=True), "max_tokens"),
    (chat(n="2"), "n"),
    (chat(temperature="0.5"), "temperature"),
    (chat(stream="yes"), "stream"),
    (chat(seed=1.5), "seed"),
    (chat(stream_options={"include_usage": True}), "stream_options"),
    (chat(stream=True, stream_options="usage"), "stream_options"),
    (chat(tools={"type": "function"}), "tools"),
    (chat(tools=[{"type": "function", "function": {"description": "no name"}}]), "tools.0.function.name"),
    (chat(tools=[{"type": "function", "function": {"name": "f", "parameters": "x"}}]), "tools.0.function.parameters"),
    (chat(tools=[{"type": "retrieval"}]), "tools.0.type"),
    (chat(tools=[{"type": "function", "function": {"name": "bad name!"}}]), "tools.0.function.name"),
    (chat(tool_choice="auto"), "tool_choice"),
    (chat(response_format={"type": "xml"}), "response_format"),
    (chat(response_format="json"), "response_format"),
    (chat(response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": "object"}}), None),
    (chat(messages=[{"role": "wizard", "content": "hi"}]), "messages.0.role"),
    (chat(messages=[{"role": "user", "content": 7}]), "messages.0.content"),
    (chat(messages=[]), "messages"),
    (chat(messages="hi"), "messages"),
    (chat(max_tokens=-1), "max_tokens"),
    (chat(max_tokens=0), "max_tokens"),
    (chat(max_tokens=10**30), "max_tokens"),
    (chat(temperature=-1), "temperature"),
    (chat(top_p=7), "top_p"),
    (chat(logprobs=True, top_logprobs=21), "top_logprobs"),
    (chat(top_logprobs=2), "top_logprobs"),
    (chat(n=0), "n"),
    (chat(n=10**9), "n"),
    (chat(stop=["a"] * 5), "stop"),
    (chat(stop="x" * 33), "stop"),
    (chat(stop=[1, 2]), "stop"),
    (chat(stop_token_ids=[True]), "stop_token_ids"),
    (chat(model=7), "model"),
]


@pytest.mark.parametrize(("body", "param"), GARBAGE, ids=[f"{i}" for i in range(len(GARBAGE))])
def test_garbage_is_refused_naming_the_field(http: httpx.Client, body: dict[str, Any], param: str | None) -> None:
    error = refused(http, body)
    assert error["type"] == "invalid_request_error"
    if param is not None:
        assert error["param"] is not None and error["param"].startswith(param), error
    else:
        assert "response_format" in (error["param"] or ""), error


def test_completions_garbage_is_refused_too(http: httpx.Client) -> None:
    base = {"model": "smollm2", "prompt": "Once", "max_tokens": 2}
    assert refused(http, {**base, "prompt": [1, True]}, "/v1/completions")["param"].startswith("prompt")
    assert refused(http, {**base, "echo": "yes"}, "/v1/completions")["param"] == "echo"
    assert refused(http, {**base, "logprobs": 99}, "/v1/completions")["param"] == "logprobs"
    assert refused(http, {**base, "prompt": [-5]}, "/v1/completions")["message"]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "smollm2", "messages": [{"role": "user", "content": "\\ud800"}]}',  # a lone surrogate
        b'{"model": "smollm2", "messages": [{"role": "user", "content": "\xff\xfe"}]}',  # not UTF-8
        b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
        b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "temperature": 1e999}',
        b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": -Infinity}',
        b'{"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]',  # truncated
        b"[]",
        b"",
    ],
)
def test_undecodable_bodies_are_refused(http: httpx.Client, raw: bytes) -> None:
    assert refused(http, raw)["message"]


# --- finding 3: generate's parameters ----------------------------------------------------------


@pytest.mark.parametrize("parameters", [[], "", 0, "abc", 7, [1]])
def test_generate_parameters_must_be_an_object(http: httpx.Client, parameters: Any) -> None:
    body = {"text_input": "Once upon a time", "parameters": parameters}
    answer = http.post("/v2/models/smollm2/generate", json=body)
    assert answer.status_code == 400 and "parameters" in answer.json()["error"]


def test_generate_without_max_tokens_stops_at_the_bounded_default(http: httpx.Client) -> None:
    body = {"text_input": "Once upon a time", "parameters": {"ignore_eos": True, "temperature": 0}}
    answer = http.post("/v2/models/smollm2/generate", json=body)
    assert answer.status_code == 200
    text = answer.json()["text_output"]
    assert 0 < len(text) < 6 * 20  # LIMITS.default_max_tokens tokens, not the context length
    wrong = http.post("/v2/models/smollm2/generate", json={"text_input": "x", "parameters": {"max_tokens": "4"}})
    assert wrong.status_code == 400 and "max_tokens" in wrong.json()["error"]


# --- finding 2: one large request must not block the server ------------------------------------


def test_the_findings_500k_message_body_is_413_before_it_is_parsed(http: httpx.Client) -> None:
    """Finding 2's body (15.5 MB compact): 400 after 13 s with the event loop blocked, 3 GB RSS, before."""
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}] * 500_000, "max_tokens": 4}
    raw = json.dumps(body, separators=(",", ":")).encode()
    started = time.perf_counter()
    error = refused(http, raw, status=413)
    assert str(LIMITS.max_body_bytes) in error["message"]
    assert time.perf_counter() - started < 5, "refused from the Content-Length, not after parsing"


def test_too_many_messages_and_characters_are_refused_before_tokenizing(
    http: httpx.Client, server: BackgroundServer
) -> None:
    many = [{"role": "user", "content": "hi"}] * 5000  # under the body limit, over max_messages
    done = threading.Event()
    slowest = 0.0

    def probe() -> None:
        nonlocal slowest
        with httpx.Client(base_url=f"http://{server.http_url}", timeout=30) as other:
            while not done.is_set():
                started = time.perf_counter()
                assert other.get("/v2/health/ready").status_code == 200
                slowest = max(slowest, time.perf_counter() - started)

    watcher = threading.Thread(target=probe)
    watcher.start()
    try:
        error = refused(http, chat(messages=many))
        assert error["param"] == "messages" and "max_messages" in error["message"]
        long = [{"role": "user", "content": "word " * 1000}] * 2
        error = refused(http, chat(messages=long))
        assert error["param"] == "messages" and "max_prompt_chars" in error["message"]
        error = refused(http, {"text_input": "x" * 5000}, "/v2/models/smollm2/generate")
    finally:
        done.set()
        watcher.join()
    assert "max_prompt_chars" in error
    assert slowest < 2.0, f"a health probe waited {slowest:.2f} s behind the refused requests"


def test_text_routes_take_the_same_limits(http: httpx.Client) -> None:
    """Issue 50, finding 15: /tokenize checks max_messages, max_prompt_chars and max_body_bytes as a
    generation would (it took 16 MiB bodies and any prompt); completions bound their list of prompts."""
    error = refused(http, {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}] * 100}, "/tokenize")
    assert error["param"] == "messages" and "max_messages" in error["message"]
    error = refused(http, {"model": "smollm2", "prompt": "word " * 1000}, "/tokenize")
    assert error["param"] == "prompt" and "max_prompt_chars" in error["message"]
    big = json.dumps({"model": "smollm2", "prompt": "x", "pad": "y" * (300 << 10)}).encode()
    assert str(LIMITS.max_body_bytes) in refused(http, big, "/tokenize", status=413)["message"]
    many = {"model": "smollm2", "prompt": ["hi"] * (LIMITS.max_prompts + 1), "max_tokens": 1}
    error = refused(http, many, "/v1/completions")
    assert error["param"] == "prompt" and "max_prompts" in error["message"]
    ids = http.post("/tokenize", json={"model": "smollm2", "prompt": "Say hi."}).json()["tokens"]
    assert http.post("/detokenize", json={"model": "smollm2", "tokens": ids}).json()["prompt"] == "Say hi."


# --- a fuzz of hostile bodies --------------------------------------------------------------------

HOSTILE_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2, 3.5, -0.0, 10**6, 10**19, -(10**19), 1e308, "", "3", "x" * 300, [], [1],
    ["a"] * 20, [None], {}, {"a": 1}, {"type": "function"}, [{"type": "function", "function": {}}],
    {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "object"}}}, "\u0000", "\U0001f600" * 50,
]  # fmt: skip
FIELDS = [
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stop", "seed",
    "stream", "stream_options", "logprobs", "top_logprobs", "presence_penalty", "frequency_penalty", "top_k",
    "min_p", "repetition_penalty", "stop_token_ids", "ignore_eos", "tools", "tool_choice", "response_format",
    "user", "logit_bias",
]  # fmt: skip


def hostile_bodies(count: int, seed: int = 38) -> list[bytes]:
    """``count`` bodies: the good request with one to three fields replaced by hostile values, message
    lists mangled, or the JSON itself cut or corrupted."""
    chance = random.Random(seed)
    bodies = []
    for index in range(count):
        body: dict[str, Any] = json.loads(json.dumps(GOOD))
        for _ in range(chance.randint(1, 3)):
            body[chance.choice(FIELDS)] = chance.choice(HOSTILE_VALUES)
        if index % 7 == 0:
            role = chance.choice(["user", "tool", "x", 5])
            body["messages"] = [{"role": role, "content": chance.choice(HOSTILE_VALUES)}]
        raw = json.dumps(body).encode()
        if index % 11 == 0:
            raw = raw[: chance.randint(0, len(raw))]
        elif index % 13 == 0:
            at = chance.randrange(len(raw))
            raw = raw[:at] + bytes([chance.randrange(256)]) + raw[at + 1 :]
        bodies.append(raw)
    return bodies


def rss_mb() -> float:
    """This process's resident memory (the BackgroundServer runs in it)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / (1 << 20)


@pytest.mark.slow
def test_300_hostile_bodies_no_5xx_no_hang_memory_bounded(http: httpx.Client, server: BackgroundServer) -> None:
    http.post(CHAT, json=GOOD)  # warm: the first generation allocates the decoder's buffers
    before = rss_mb()
    statuses: dict[int, int] = {}
    for raw in hostile_bodies(300):
        with http.stream("POST", CHAT, content=raw, headers={"content-type": "application/json"}) as answer:
            answer.read()  # a stream must end too (within the client's timeout): no hang
        statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
        assert answer.status_code < 500, (raw[:200], answer.text[:300])
        if answer.status_code != 200:
            assert "error" in answer.json()
    growth = rss_mb() - before
    print(f"statuses {sorted(statuses.items())}; RSS growth {growth:.1f} MB")
    assert statuses.get(400, 0) > 150
    normal = http.post(CHAT, json=GOOD)
    assert normal.status_code == 200 and normal.json()["choices"][0]["message"]["content"]
    assert growth < 150, f"RSS grew {growth:.1f} MB over 300 hostile requests"
    assert engine_idle(server)


def engine_idle(server: BackgroundServer) -> bool:
    engine = server.plane.llms.get("smollm2").engine
    deadline = time.monotonic() + 5
    while engine.busy and time.monotonic() < deadline:
        time.sleep(0.05)
    return not engine.busy
