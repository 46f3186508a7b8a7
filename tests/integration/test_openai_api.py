"""The OpenAI-compatible API and Triton's generate extension, on the real server with SmolLM2 (int4),
through the official ``openai`` client and raw HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
import tritonclient.http as tritonhttp
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from mcp2026ai.contract import SLAClass
from mcp2026ai.generation.config import EngineConfig, default_generation_classes
from mcp2026ai.generation.engine import Engine
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.observability import metrics, tracing
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

from .conftest import listening_line, mcp_command

pytestmark = pytest.mark.timeout(180)
CONTEXT = 512
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def llm_registry(home: Path, gguf: Path) -> ModelRegistry:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("smollm2", gguf)
    return registry


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = llm_registry(tmp_path_factory.mktemp("llm-home"), smollm2_gguf)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=8, max_model_len=CONTEXT)
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


def engine_of(server: BackgroundServer) -> Engine:
    return server.plane.llms.get("smollm2").engine


def chat_prompt_tokens(server: BackgroundServer, messages: list[dict[str, str]]) -> int:
    tokenizer = engine_of(server).tokenizer
    return len(tokenizer.encode(tokenizer.apply_chat_template(messages), add_special_tokens=False))


def test_models_lists_the_language_model(client: openai.OpenAI) -> None:
    assert [model.id for model in client.models.list()] == ["smollm2"]
    assert client.models.retrieve("smollm2").owned_by == "mcp2026ai"


def test_chat_answer_and_its_stream_agree_with_exact_usage(client: openai.OpenAI, server: BackgroundServer) -> None:
    answer = client.chat.completions.create(model="smollm2", messages=QUESTION, temperature=0, max_tokens=30)
    text = answer.choices[0].message.content
    assert answer.object == "chat.completion" and "Paris" in (text or "")
    assert answer.usage is not None and answer.usage.prompt_tokens == chat_prompt_tokens(server, QUESTION)
    assert answer.choices[0].finish_reason in ("stop", "length")
    chunks = list(
        client.chat.completions.create(
            model="smollm2",
            messages=QUESTION,
            temperature=0,
            max_tokens=30,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert streamed == text and chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (
        answer.usage.prompt_tokens,
        answer.usage.completion_tokens,
    )  # cached_tokens may differ: the second request finds the first's prompt in the prefix cache
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == answer.choices[0].finish_reason


def test_content_parts_and_max_completion_tokens(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="smollm2",
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "Count from one to "}, {"type": "text", "text": "twenty."}],
            }
        ],
        max_completion_tokens=7,
        temperature=0,
    )
    assert answer.choices[0].finish_reason == "length" and answer.usage and answer.usage.completion_tokens == 7


def test_completions_with_logprobs_and_n(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="smollm2", prompt="The sky is", max_tokens=5, logprobs=2, n=2, seed=3)
    assert [choice.index for choice in answer.choices] == [0, 1]
    for choice in answer.choices:
        assert choice.finish_reason == "length" and choice.logprobs is not None
        assert len(choice.logprobs.tokens or []) == 5 and "".join(choice.logprobs.tokens or []) == choice.text
        assert all(len(top) == 2 for top in choice.logprobs.top_logprobs or [])
    assert answer.usage is not None and answer.usage.completion_tokens == 10


def test_raw_stream_is_sse_ending_in_done(http: httpx.Client) -> None:
    body = {"model": "smollm2", "prompt": "Once upon a time", "max_tokens": 4, "stream": True}
    response = http.post("/v1/completions", json=body)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = [line for line in response.text.split("\n\n") if line]
    assert events[-1] == "data: [DONE]"
    texts = [json.loads(event.removeprefix("data: "))["choices"][0]["text"] for event in events[:-1]]
    assert len("".join(texts)) > 0


def assert_openai_error(response: httpx.Response, status: int, *fragments: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    for fragment in fragments:
        assert fragment in error["message"], error["message"]
    return error


def test_bad_requests_get_openai_errors(http: httpx.Client, server: BackgroundServer) -> None:
    error = assert_openai_error(
        http.post("/v1/chat/completions", json={"model": "nope", "messages": QUESTION}), 404, "nope"
    )
    assert error["code"] == "model_not_found"
    assert_openai_error(
        http.post("/v1/chat/completions", json={"model": "smollm2", "messages": QUESTION, "max_tokens": -1}),
        400,
        "max_tokens",
    )
    assert_openai_error(
        http.post("/v1/completions", content=b"{not json", headers={"content-type": "application/json"}), 400, "JSON"
    )
    prompt = chat_prompt_tokens(server, QUESTION)
    assert_openai_error(
        http.post("/v1/chat/completions", json={"model": "smollm2", "messages": QUESTION, "max_tokens": CONTEXT}),
        400,
        f"{prompt} in the prompt, {CONTEXT} in the completion",
        f"maximum context length is {CONTEXT} tokens",
    )
    assert_openai_error(http.post("/v1/chat/completions", json={"model": "smollm2", "messages": []}), 400, "messages")
    assert_openai_error(
        http.post("/v1/completions", json={"model": "smollm2", "prompt": "x", "temperature": 5}), 400, "temperature"
    )
    assert_openai_error(
        http.post("/v1/completions", json={"model": "smollm2", "prompt": "x"}, headers={"x-sla-class": "gold"}),
        400,
        "unknown SLA class",
    )
    assert_openai_error(http.post("/v1/completions", json=[1, 2]), 400, "JSON object")


def test_the_openai_client_raises_its_own_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="missing", messages=QUESTION)
    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.completions.create(model="smollm2", prompt="x", max_tokens=-5)


def test_triton_generate_and_generate_stream(http: httpx.Client) -> None:
    body = {"text_input": "The capital of France is", "parameters": {"max_tokens": 8, "temperature": 0}}
    whole = http.post("/v2/models/smollm2/generate", json=body)
    assert whole.status_code == 200, whole.text
    document = whole.json()
    assert document["model_name"] == "smollm2" and document["model_version"] == "1.0.0"
    streamed = http.post("/v2/models/smollm2/generate_stream", json={**body, "max_tokens": 8})
    parts = [json.loads(event.removeprefix("data: "))["text_output"] for event in streamed.text.split("\n\n") if event]
    assert "".join(parts) == document["text_output"] and len(parts) > 1
    refused = http.post("/v2/models/smollm2/generate", json={"parameters": {}})
    assert refused.status_code == 400 and "text_input" in refused.json()["error"]
    assert http.post("/v2/models/missing/generate", json=body).status_code == 404


def test_triton_clients_see_the_language_model(server: BackgroundServer) -> None:
    client = tritonhttp.InferenceServerClient(server.http_url)
    assert client.is_model_ready("smollm2") and client.is_server_ready()
    metadata = client.get_model_metadata("smollm2")
    assert metadata["platform"] == "onnxruntime_decoder" and metadata["versions"] == ["1.0.0"]
    assert [(i["name"], i["datatype"]) for i in metadata["inputs"]] == [("text_input", "BYTES")]
    assert [(o["name"], o["datatype"]) for o in metadata["outputs"]] == [("text_output", "BYTES")]


def time_to_first_token(http: httpx.Client) -> float:
    started = time.perf_counter()
    body = {"model": "smollm2", "messages": QUESTION, "max_tokens": 3, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["delta"].get("content"):
                return time.perf_counter() - started
    raise AssertionError("no content chunk")


def test_disconnecting_clients_abort_their_generations(http: httpx.Client, server: BackgroundServer) -> None:
    before = min(time_to_first_token(http) for _ in range(3))
    body = {"model": "smollm2", "prompt": "Rivers", "max_tokens": 400, "stream": True, "ignore_eos": True}
    clients = [httpx.Client(base_url=f"http://{server.http_url}", timeout=60) for _ in range(8)]
    streams = [session.stream("POST", "/v1/completions", json=body) for session in clients]
    lines = [stream.__enter__().iter_lines() for stream in streams]  # dropping an iterator disconnects
    for line in lines:
        assert next(line).startswith("data: {")  # generating
    assert engine_of(server).slots.active == 8
    for stream, session in zip(streams, clients, strict=True):
        stream.__exit__(None, None, None)
        session.close()
    deadline = time.monotonic() + 10
    while engine_of(server).slots.active and time.monotonic() < deadline:
        time.sleep(0.05)
    assert engine_of(server).slots.active == 0
    after = min(time_to_first_token(http) for _ in range(3))
    assert after < before * 3 + 0.2, (before, after)


def test_generation_metrics_are_exported(http: httpx.Client) -> None:
    http.post("/v1/completions", json={"model": "smollm2", "prompt": "Hi", "max_tokens": 3})
    families = {family.name: family for family in text_string_to_metric_families(http.get("/metrics").text)}

    def value(name: str, suffix: str = "") -> float:
        return sum(
            s.value for s in families[name].samples if s.name == name + suffix and s.labels.get("model") == "smollm2"
        )

    assert value("mcp_generation_time_to_first_token_seconds", "_count") >= 1
    assert value("mcp_generation_inter_token_latency_seconds", "_count") >= 2
    assert value("mcp_generation_e2e_seconds", "_count") >= 1
    assert value("mcp_generation_prompt_tokens", "_total") > 0 and value("mcp_generation_tokens", "_total") >= 3
    assert "mcp_generation_sequences" in families and "mcp_generation_kv_cache_usage_ratio" in families


def test_a_full_generation_queue_answers_429_with_retry_after(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    classes = default_generation_classes()
    classes[SLAClass.BEST_EFFORT] = classes[SLAClass.BEST_EFFORT].model_copy(update={"capacity": 1})
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=5,
        generation=EngineConfig(max_num_seqs=1, max_model_len=256, classes=classes),
    )
    with BackgroundServer(llm_registry(tmp_path / "home", smollm2_gguf), ["smollm2"], config) as small:
        body = {"model": "smollm2", "prompt": "Tell me a story.", "max_tokens": 200, "stream": True, "ignore_eos": True}
        with contextlib.ExitStack() as held:
            sessions = [held.enter_context(httpx.Client(base_url=f"http://{small.http_url}", timeout=60)) for _ in "ab"]
            running = held.enter_context(sessions[0].stream("POST", "/v1/completions", json=body)).iter_lines()
            assert next(running).startswith("data: {")  # holds the only slot
            waiting = held.enter_context(sessions[1].stream("POST", "/v1/completions", json=body))
            assert waiting.status_code == 200  # accepted: its stream is open, waiting for the slot
            with httpx.Client(base_url=f"http://{small.http_url}", timeout=60) as third:
                refused = third.post("/v1/completions", json=body)
            assert_openai_error(refused, 429, "best-effort queue is full")
            assert refused.headers["retry-after"] == "1"
            labels = {"model": "smollm2", "finish_reason": "rejected"}
            assert (metrics.REGISTRY.get_sample_value("mcp_generation_requests_total", labels) or 0) >= 1
            refusals = {"protocol": "openai", "sla_class": "best-effort", "code": "429"}
            assert requests_counted(refusals) >= 1
            small.plane.stop_accepting()  # draining after SIGTERM: new /v1 work is refused, the running stream goes on
            with httpx.Client(base_url=f"http://{small.http_url}", timeout=60) as late:
                chat = {"model": "smollm2", "messages": QUESTION, "max_tokens": 2}
                assert_openai_error(late.post("/v1/chat/completions", json=chat), 503, "shutting down")
                assert_openai_error(late.post("/v1/completions", json=body), 503, "shutting down")
            assert next(line for line in running if line).startswith("data: {")  # still streaming


def requests_counted(labels: dict[str, str]) -> float:
    """``mcp_requests_total`` of smollm2 summed over the label values not given."""
    total = 0.0
    for family in text_string_to_metric_families(metrics.scrape("")[0].decode()):
        for sample in family.samples:
            if sample.name == "mcp_requests_total" and sample.labels.get("model") == "smollm2":
                total += sample.value if all(sample.labels.get(k) == v for k, v in labels.items()) else 0
    return total


def test_v1_requests_are_counted_with_their_sla_class(http: httpx.Client) -> None:
    labels = {"protocol": "openai", "sla_class": "latency-critical", "code": "200"}
    before = requests_counted(labels)
    body = {"model": "smollm2", "messages": QUESTION, "max_tokens": 2, "temperature": 0}
    headers = {"x-sla-class": "latency-critical"}
    assert http.post("/v1/chat/completions", json=body, headers=headers).status_code == 200
    with http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}, headers=headers) as streamed:
        assert [line for line in streamed.iter_lines() if line][-1] == "data: [DONE]"
    assert requests_counted(labels) == before + 2
    unknown = http.post("/v1/chat/completions", json=body, headers={"x-sla-class": "gold"})
    assert_openai_error(unknown, 400, "unknown SLA class")


def test_one_span_per_generation_child_of_the_callers_trace(http: httpx.Client) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.use_tracer_provider(provider)
    try:
        trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
        headers = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01", "x-sla-class": "latency-critical"}
        body = {"model": "smollm2", "messages": QUESTION, "max_tokens": 4, "temperature": 0}
        assert http.post("/v1/chat/completions", json=body, headers=headers).status_code == 200
        deadline = time.monotonic() + 5
        while not memory.get_finished_spans() and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        tracing.use_tracer_provider(None)
    (span,) = memory.get_finished_spans()
    assert span.name == "generate smollm2" and format(span.context.trace_id, "032x") == trace_id
    attributes = dict(span.attributes or {})
    assert attributes["slo.class"] == "latency-critical" and attributes["gen_ai.usage.output_tokens"] == 4
    assert attributes["gen_ai.response.finish_reason"] == "length" and attributes["gen_ai.time_to_first_token_ms"] > 0


def test_mcp_serve_serves_a_language_model_beside_tensor_models(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path, mlp_path: Path
) -> None:
    home = tmp_path / "home"
    registry = llm_registry(home, smollm2_gguf)
    registry.register("mlp", mlp_path)
    command = [*mcp_command(), "serve", "--port", "0", "--grpc-port", "-1", "--max-num-seqs", "2"]
    command += ["--metrics-compat", "vllm"]
    env = {**os.environ, "MCP_HOME": str(home), CACHE_VARIABLE: str(LLM_CACHE)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        match = re.search(r"http=(\d+) grpc=off models=mlp:1\.0\.0,smollm2:1\.0\.0", line)
        assert match, line
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{match.group(1)}/v1", api_key="unused", max_retries=0)
        answer = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=4, n=2)
        assert len(answer.choices) == 2 and answer.usage is not None and answer.usage.completion_tokens == 8
        with pytest.raises(openai.BadRequestError, match="max_num_seqs"):
            client.completions.create(model="smollm2", prompt="Hi", max_tokens=2, n=3)
        tensor = httpx.post(
            f"http://127.0.0.1:{match.group(1)}/v2/models/mlp/infer",
            json={"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [0.1, 0.2, 0.3, 0.4]}]},
        )
        assert tensor.status_code == 200, tensor.text
        scraped = httpx.get(f"http://127.0.0.1:{match.group(1)}/metrics").text
        assert 'vllm:generation_tokens_total{model_name="smollm2"} 8.0' in scraped
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err, err
