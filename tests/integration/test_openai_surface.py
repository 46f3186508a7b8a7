"""The OpenAI surface beyond the basics, on the real server with SmolLM2 (int4): vLLM's /tokenize and
/detokenize, cached_tokens, the context-length error clients detect, logit_bias, min_tokens,
stop_token_ids, priority, echo with prompt logprobs, a list of prompts, and every create parameter of
the openai client honoured or refused by name."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.observability.metrics import VLLM_ALIASES
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.openai.parameters import REFUSED
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import register_smollm2

pytestmark = pytest.mark.timeout(180)
CONTEXT = 512
MODEL = "smollm2"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = register_smollm2(tmp_path_factory.mktemp("llm-home"), smollm2_gguf)
    generation = EngineConfig(max_num_seqs=8, max_model_len=CONTEXT, prefix_cache_mb=16)
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, generation=generation, metrics_compat="vllm")
    with BackgroundServer(registry, [MODEL], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as session:
        yield session


def refused(response: httpx.Response, param: str | None, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["param"] == param, error
    return error


def greedy_tokens(http: httpx.Client, prompt: str, count: int, **extra: Any) -> list[int]:
    body = {"model": MODEL, "prompt": prompt, "max_tokens": count, "temperature": 0, "logprobs": 0, **extra}
    answer = http.post("/v1/completions", json=body)
    assert answer.status_code == 200, answer.text
    tokens: list[str] = answer.json()["choices"][0]["logprobs"]["tokens"]
    ids = http.post("/tokenize", json={"model": MODEL, "prompt": "".join(tokens)}).json()["tokens"]
    return list(ids)


# --- token plumbing ---------------------------------------------------------------------------


def test_tokenize_counts_what_usage_counts(client: openai.OpenAI, http: httpx.Client) -> None:
    chat = http.post("/tokenize", json={"model": MODEL, "messages": QUESTION}).json()
    answer = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=1)  # type: ignore[arg-type]
    assert answer.usage is not None and chat["count"] == answer.usage.prompt_tokens == len(chat["tokens"])
    assert chat["max_model_len"] == CONTEXT and chat["token_strs"] is None
    plain = http.post("/tokenize", json={"model": MODEL, "prompt": "The sky is blue", "return_token_strs": True})
    document = plain.json()
    completion = client.completions.create(model=MODEL, prompt="The sky is blue", max_tokens=1)
    assert completion.usage is not None and document["count"] == completion.usage.prompt_tokens
    assert "".join(document["token_strs"]) == "The sky is blue"
    back = http.post("/detokenize", json={"model": MODEL, "tokens": document["tokens"]})
    assert back.json() == {"prompt": "The sky is blue"}


def test_tokenize_refuses_bad_requests_by_name(http: httpx.Client) -> None:
    refused(http.post("/tokenize", json={"model": MODEL, "prompt": "x", "messages": QUESTION}), "body")
    refused(http.post("/tokenize", json={"model": MODEL, "prompt": "x", "add_bos": True}), "add_bos")
    assert http.post("/tokenize", json={"model": "nope", "prompt": "x"}).json()["error"]["code"] == "model_not_found"
    refused(http.post("/detokenize", json={"model": MODEL, "tokens": [10**9]}), "tokens")


def test_a_repeated_prompt_reports_its_cached_tokens(client: openai.OpenAI) -> None:
    system = "You are a careful assistant who answers in one short sentence. " * 4
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Name a colour."}]
    first = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=1)  # type: ignore[arg-type]
    second = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=1)  # type: ignore[arg-type]
    assert first.usage and first.usage.prompt_tokens_details and second.usage and second.usage.prompt_tokens_details
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    cached = second.usage.prompt_tokens_details.cached_tokens or 0
    assert cached >= 48 and cached % 16 == 0 and cached < second.usage.prompt_tokens


def test_over_context_is_the_error_clients_detect(client: openai.OpenAI, http: httpx.Client) -> None:
    chat = {"model": MODEL, "messages": QUESTION, "max_tokens": CONTEXT}
    error = refused(http.post("/v1/chat/completions", json=chat), "messages")
    assert error["code"] == "context_length_exceeded"
    assert f"maximum context length is {CONTEXT} tokens" in error["message"]
    error = refused(http.post("/v1/completions", json={"model": MODEL, "prompt": "hi " * 600}), "prompt")
    assert error["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model=MODEL, prompt="x", max_tokens=CONTEXT)
    assert raised.value.code == "context_length_exceeded" and raised.value.param == "prompt"


# --- sampling controls ------------------------------------------------------------------------


def test_logit_bias_forces_and_bans_tokens(http: httpx.Client) -> None:
    free = greedy_tokens(http, "The capital of France is", 4)
    banana = http.post("/tokenize", json={"model": MODEL, "prompt": " banana"}).json()["tokens"][0]
    forced = greedy_tokens(http, "The capital of France is", 4, temperature=0.8, seed=1, logit_bias={str(banana): 100})
    assert forced == [banana] * 4
    banned = greedy_tokens(http, "The capital of France is", 1, logit_bias={str(free[0]): -100})
    assert banned[:1] != free[:1]
    refused(http.post("/v1/completions", json={"model": MODEL, "prompt": "x", "logit_bias": {"5": 101}}), "logit_bias")
    refused(
        http.post("/v1/completions", json={"model": MODEL, "prompt": "x", "logit_bias": {"99999999": 1}}), "logit_bias"
    )


def test_stop_token_ids_and_min_tokens(http: httpx.Client) -> None:
    first = greedy_tokens(http, "One, two, three,", 1)[0]
    body = {"model": MODEL, "prompt": "One, two, three,", "max_tokens": 12, "temperature": 0}
    stopped = http.post("/v1/completions", json={**body, "stop_token_ids": [first]}).json()
    assert stopped["choices"][0]["finish_reason"] == "stop" and stopped["choices"][0]["text"] == ""
    held = http.post("/v1/completions", json={**body, "stop_token_ids": [first], "min_tokens": 6}).json()
    assert held["usage"]["completion_tokens"] >= 6 and held["choices"][0]["text"]
    refused(http.post("/v1/completions", json={**body, "min_tokens": -1}), "min_tokens")


def requests_of_class(http: httpx.Client, sla_class: str) -> float:
    families = text_string_to_metric_families(http.get("/metrics").text)
    return sum(
        sample.value
        for family in families
        if family.name == "mcp_requests"
        for sample in family.samples
        if sample.name == "mcp_requests_total"
        and sample.labels.get("sla_class") == sla_class
        and sample.labels.get("protocol") == "openai"
    )


def test_priority_and_service_tier_pick_the_sla_class(http: httpx.Client) -> None:
    body = {"model": MODEL, "prompt": "Hi", "max_tokens": 1}
    for fields, sla_class in [
        ({"priority": -1}, "latency-critical"),
        ({"service_tier": "priority"}, "latency-critical"),
        ({"priority": 5}, "best-effort"),
        ({"service_tier": "flex"}, "best-effort"),
    ]:
        before = requests_of_class(http, sla_class)
        assert http.post("/v1/completions", json={**body, **fields}).status_code == 200
        assert requests_of_class(http, sla_class) == before + 1, fields
    refused(http.post("/v1/completions", json={**body, "service_tier": "scale"}), "service_tier")


# --- echo and lists of prompts -----------------------------------------------------------------


def test_echo_returns_the_prompt_and_its_logprobs(client: openai.OpenAI, http: httpx.Client) -> None:
    prompt = "The capital of France is"
    ids = http.post("/tokenize", json={"model": MODEL, "prompt": prompt}).json()["tokens"]
    plain = client.completions.create(model=MODEL, prompt=prompt, max_tokens=1, temperature=0, logprobs=1)
    answer = client.completions.create(model=MODEL, prompt=prompt, max_tokens=1, temperature=0, logprobs=1, echo=True)
    choice = answer.choices[0]
    assert choice.text == prompt + plain.choices[0].text
    logprobs = choice.logprobs
    assert logprobs is not None and logprobs.tokens and logprobs.token_logprobs and logprobs.text_offset
    assert len(logprobs.tokens) == len(ids) + 1 and "".join(logprobs.tokens) == choice.text
    assert logprobs.token_logprobs[0] is None and (logprobs.top_logprobs or [None])[0] is None
    assert all(value is not None and value <= 0 for value in logprobs.token_logprobs[1:])
    assert logprobs.text_offset[0] == 0 and logprobs.text_offset[-1] == len(prompt)
    assert math.isclose(logprobs.token_logprobs[-1], plain.choices[0].logprobs.token_logprobs[0], abs_tol=1e-3)  # type: ignore[union-attr,index]
    # the prompt continued by the token just generated: that token's prompt logprob is its generated one
    longer = prompt + plain.choices[0].text
    scored = client.completions.create(model=MODEL, prompt=longer, max_tokens=1, logprobs=0, echo=True)
    assert math.isclose(scored.choices[0].logprobs.token_logprobs[len(ids)], logprobs.token_logprobs[-1], abs_tol=1e-2)  # type: ignore[union-attr,index]
    streamed = client.completions.create(
        model=MODEL, prompt=prompt, max_tokens=3, temperature=0, echo=True, stream=True
    )
    text = "".join(chunk.choices[0].text for chunk in streamed)
    assert text.startswith(prompt + plain.choices[0].text)


def test_echo_with_max_tokens_0_scores_the_prompt_only(client: openai.OpenAI, http: httpx.Client) -> None:
    prompt = "The capital of France is Paris"
    ids = http.post("/tokenize", json={"model": MODEL, "prompt": prompt}).json()["tokens"]
    answer = client.completions.create(model=MODEL, prompt=prompt, max_tokens=0, logprobs=0, echo=True)
    logprobs = answer.choices[0].logprobs
    assert answer.choices[0].text == prompt and logprobs is not None and logprobs.token_logprobs
    assert len(logprobs.token_logprobs) == len(ids) and answer.usage and answer.usage.completion_tokens == 0
    chunks = list(client.completions.create(model=MODEL, prompt=prompt, max_tokens=0, echo=True, stream=True))
    assert "".join(chunk.choices[0].text for chunk in chunks) == prompt
    with pytest.raises(openai.BadRequestError) as raised:
        client.completions.create(model=MODEL, prompt=prompt, max_tokens=0)
    assert raised.value.param == "max_tokens"


def test_a_list_of_prompts_gets_choices_numbered_as_openai_does(client: openai.OpenAI) -> None:
    prompts = ["The sky is", "Water is"]
    alone = [client.completions.create(model=MODEL, prompt=p, max_tokens=4, temperature=0) for p in prompts]
    both = client.completions.create(model=MODEL, prompt=prompts, max_tokens=4, temperature=0, n=2)
    assert [choice.index for choice in both.choices] == [0, 1, 2, 3]
    assert [choice.text for choice in both.choices] == [alone[0].choices[0].text] * 2 + [alone[1].choices[0].text] * 2
    assert both.usage and both.usage.prompt_tokens == sum(a.usage.prompt_tokens for a in alone if a.usage)
    assert both.usage.completion_tokens == 4 * 4
    texts = ["", ""]
    for chunk in client.completions.create(model=MODEL, prompt=prompts, max_tokens=4, temperature=0, stream=True):
        texts[chunk.choices[0].index] += chunk.choices[0].text
    assert texts == [a.choices[0].text for a in alone]
    token_lists = client.completions.create(model=MODEL, prompt=[[504, 3656, 314], [504]], max_tokens=2)
    assert len(token_lists.choices) == 2


def test_best_of_keeps_the_likeliest_choices(client: openai.OpenAI) -> None:
    ranked = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=6, best_of=4, n=2, seed=5)
    assert [choice.index for choice in ranked.choices] == [0, 1] and ranked.usage
    assert ranked.usage.completion_tokens == 4 * 6 and all(choice.logprobs is None for choice in ranked.choices)
    scored = client.completions.create(
        model=MODEL, prompt="Once upon a time", max_tokens=6, n=4, seed=5, logprobs=0
    )  # the same four choices (same seed), with their logprobs
    means = sorted(
        (sum(c.logprobs.token_logprobs) / len(c.logprobs.token_logprobs), c.text)  # type: ignore[union-attr,arg-type]
        for c in scored.choices
    )
    assert [choice.text for choice in ranked.choices] == [text for _, text in reversed(means)][:2]
    for fields in ({"best_of": 1, "n": 2}, {"best_of": 3, "stream": True}, {"best_of": 3, "echo": True}):
        with pytest.raises(openai.BadRequestError) as raised:
            client.completions.create(model=MODEL, prompt="Hi", max_tokens=2, **fields)  # type: ignore[call-overload]
        assert raised.value.param == "best_of", fields


# --- every create parameter --------------------------------------------------------------------

CHAT_HONOURED: dict[str, Any] = {
    "frequency_penalty": 0.5,
    "logit_bias": {"2": -5},
    "logprobs": True,
    "top_logprobs": 2,  # sent with logprobs: true
    "max_completion_tokens": 2,
    "max_tokens": 2,
    "n": 2,
    "presence_penalty": 0.5,
    "seed": 7,
    "service_tier": "flex",
    "stop": ["\n"],
    "store": False,
    "modalities": ["text"],
    "stream": False,
    "stream_options": None,
    "temperature": 0.5,
    "top_p": 0.9,
    "user": "someone",
    "safety_identifier": "someone-hashed",
    "prompt_cache_key": "shared-system-prompt",
    "response_format": {"type": "json_object"},
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "tool_choice": "none",
    "parallel_tool_calls": False,
}
"""Each honoured parameter with a value this test sends; their effects are tested above or in
test_openai_api.py (n, logprobs, stop, seed, max_tokens, streaming)."""

COMPLETIONS_HONOURED: dict[str, Any] = {
    "best_of": 2,
    "echo": True,
    "frequency_penalty": 0.5,
    "logit_bias": {"2": -5},
    "logprobs": 1,
    "max_tokens": 2,
    "n": 2,
    "presence_penalty": 0.5,
    "seed": 7,
    "stop": "\n",
    "stream": False,
    "stream_options": None,
    "temperature": 0.5,
    "top_p": 0.9,
    "user": "someone",
}

REFUSED_VALUES: dict[str, Any] = {
    "audio": {"voice": "alloy", "format": "wav"},
    "functions": [{"name": "f", "parameters": {}}],
    "function_call": "auto",
    "metadata": {"k": "v"},
    "moderation": {"mode": "on"},
    "prediction": {"type": "content", "content": "x"},
    "prompt_cache_options": {"mode": "auto"},
    "prompt_cache_retention": "24h",
    "reasoning_effort": "low",
    "verbosity": "low",
    "web_search_options": {},
    "suffix": "tail",
}
CLIENT_PLUMBING = {"self", "model", "messages", "prompt", "extra_headers", "extra_query", "extra_body", "timeout"}


def create_parameters(method: Any) -> set[str]:
    return set(inspect.signature(method).parameters) - CLIENT_PLUMBING


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_every_create_parameter_is_honoured_or_refused_by_name(client: openai.OpenAI, endpoint: str) -> None:
    chat = endpoint == "chat"
    method = client.chat.completions.create if chat else client.completions.create
    honoured = CHAT_HONOURED if chat else COMPLETIONS_HONOURED
    parameters = create_parameters(method)
    unclassified = parameters - set(honoured) - set(REFUSED_VALUES)
    assert not unclassified, f"classify these new openai parameters: {sorted(unclassified)}"
    base: dict[str, Any] = {"model": MODEL, **({"messages": QUESTION} if chat else {"prompt": "Hello"})}
    for name in sorted(parameters & set(honoured)):
        fields = {"max_tokens": 2, name: honoured[name]} | ({"logprobs": True} if name == "top_logprobs" else {})
        method(**base, **fields)  # a 200: anything else raises
    for name in sorted(parameters & set(REFUSED_VALUES)):
        with pytest.raises(openai.BadRequestError) as raised:
            method(**base, **{name: REFUSED_VALUES[name]})
        assert raised.value.param == name, (name, raised.value)
    assert set(REFUSED) <= set(REFUSED_VALUES)
    with pytest.raises(openai.BadRequestError) as raised:
        method(**base, extra_body={"max_token": 5})  # a misspelt field is refused, not defaulted
    assert raised.value.param == "max_token"
    with pytest.raises(openai.BadRequestError) as raised:
        method(**base, extra_body={"store": True})
    assert raised.value.param == "store"


# --- vLLM's metric names ----------------------------------------------------------------------

VLLM_NAMES = {
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
    "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
    "vllm:num_preemptions",
}  # fmt: skip


def series(family: Any, match: dict[str, str], rename: dict[str, str]) -> dict[Any, float]:
    """``(sample suffix, labels) -> value`` of a family's samples whose labels include ``match`` (dropped),
    the other labels renamed by ``rename``."""
    found = {}
    for sample in family.samples:
        if any(sample.labels.get(key) != value for key, value in match.items()):
            continue
        labels = sorted((rename.get(k, k), v) for k, v in sample.labels.items() if k not in match)
        found[(sample.name[len(family.name) :], tuple(labels))] = sample.value
    return found


def test_vllm_metric_names_equal_their_twins(client: openai.OpenAI, http: httpx.Client) -> None:
    client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=3)  # type: ignore[arg-type]
    families = {family.name: family for family in text_string_to_metric_families(http.get("/metrics").text)}
    assert {alias.name for alias in VLLM_ALIASES} == VLLM_NAMES and set(families) >= VLLM_NAMES
    for alias in VLLM_ALIASES:
        twin = series(families[alias.source], dict(alias.match), {"model": "model_name"})
        assert series(families[alias.name], {}, {}) == twin, alias.name
        assert any(dict(labels).get("model_name") == MODEL for _, labels in twin), alias.name
    prompt = series(families["vllm:prompt_tokens"], {"model_name": MODEL}, {})
    queried = series(families["vllm:prefix_cache_queries"], {"model_name": MODEL}, {})
    assert prompt[("_total", ())] > 0 and queried[("_total", ())] > 0
