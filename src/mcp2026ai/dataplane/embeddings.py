"""Sentence embeddings as a use case, on the tensor path.

A sentence encoder is an ordinary registered ONNX model whose preprocessing has a ``text`` section
(registry/records.py ``TextPreprocessing``: its tokenizer.json, stored by digest; max_length; pooling;
normalisation; the Matryoshka sizes it was trained for). An embedding request is tokenized here,
padded to a multiple of :data:`PAD_TO` tokens (so that requests of similar length share the tensor
path's dynamic batches), run through :meth:`InferenceHandlers.infer` in chunks of at most
:data:`ROWS_PER_RUN` inputs (routing, SLA-class queues and batching apply as to any tensor request),
and pooled: the mean of the token vectors under the attention mask (or the [CLS] vector), then
scaled to unit length. ``dimensions`` cuts a vector to a size the model lists as trained for and
normalises it again; any other size is a 400 naming ``dimensions``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcp2026ai.dataplane.inference import InferenceHandlers
from mcp2026ai.errors import ContextLengthError, InvalidFieldError, ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.registry.text_encoder import tokenizer_json
from mcp2026ai.serving.llms import GenerationModels
from mcp2026ai.serving.models import ServedModels

PAD_TO = 16
ROWS_PER_RUN = 16
TOKENIZE_INLINE_CHARS = 4096


@dataclass(frozen=True)
class EmbeddingRequest:
    model: str
    inputs: Sequence[str | Sequence[int]]
    """Texts, or token ids already tokenized by the model's tokenizer (special tokens included)."""
    dimensions: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Embeddings:
    vectors: np.ndarray
    """``[inputs, dimensions]`` float32, in the order of the request's inputs."""
    prompt_tokens: int


class EmbeddingHandlers:
    """Embeddings over the served tensor models that have text preprocessing."""

    def __init__(self, models: ServedModels, inference: InferenceHandlers, llms: GenerationModels) -> None:
        self.models = models
        self.inference = inference
        self.llms = llms
        self._tokenizers: dict[str, Any] = {}

    async def embed(self, request: EmbeddingRequest) -> Embeddings:
        if not self.llms.serves(request.model):  # under a memory budget: loaded on first request
            await self.inference.ensure_loaded(InferenceRequest(request.model, {}, headers=dict(request.headers)))
        spec = self._text_spec(request.model)
        width = self._width(request.model, spec)
        cut = request.dimensions is not None and request.dimensions != width
        if cut and request.dimensions not in spec.matryoshka_dimensions:
            sizes = sorted({*spec.matryoshka_dimensions, width})
            raise InvalidFieldError(f"dimensions: model {request.model!r} gives vectors of {sizes} only", "dimensions")
        ids = await self._token_ids(spec, request.inputs)
        chunks = [ids[start : start + ROWS_PER_RUN] for start in range(0, len(ids), ROWS_PER_RUN)]
        runs = [self._run(request, spec, chunk) for chunk in chunks]
        vectors = np.concatenate(await asyncio.gather(*runs)) if runs else np.zeros((0, width), np.float32)
        if cut:
            vectors = unit_length(vectors[:, : request.dimensions])
        return Embeddings(vectors, sum(len(row) for row in ids))

    def _text_spec(self, model: str) -> TextPreprocessing:
        if not self.models.is_loaded(model) and self.llms.serves(model):
            raise InvalidFieldError(f"model {model!r} is a language model, not a sentence encoder", "model")
        record = self.models.get(model).record  # NotFoundError for an unknown model
        spec = record.preprocessing.text if record.preprocessing else None
        if spec is None:
            raise InvalidFieldError(
                f"model {model!r} is not a sentence encoder (it has no text preprocessing)", "model"
            )
        return spec

    def _width(self, model: str, spec: TextPreprocessing) -> int:
        outputs = self.models.get(model).record.signature.outputs
        chosen = next((o for o in outputs if o.name == spec.output), outputs[0]) if outputs else None
        if chosen is None or not chosen.shape or chosen.shape[-1] < 1:
            raise InvalidFieldError(f"model {model!r} has no output with a fixed vector size", "model")
        return int(chosen.shape[-1])

    async def _token_ids(self, spec: TextPreprocessing, inputs: Sequence[str | Sequence[int]]) -> list[list[int]]:
        tokenizer = self._tokenizer(spec.tokenizer)
        texts = [item for item in inputs if isinstance(item, str)]
        if sum(len(text) for text in texts) > TOKENIZE_INLINE_CHARS:
            encoded = iter(await asyncio.to_thread(tokenizer.encode_batch, texts))
        else:
            encoded = iter(tokenizer.encode_batch(texts))
        ids = [list(next(encoded).ids) if isinstance(item, str) else list(item) for item in inputs]
        vocab = tokenizer.get_vocab_size()
        for index, row in enumerate(ids):
            if not row:
                raise InvalidFieldError(f"input {index} is empty", "input")
            if len(row) > spec.max_length:
                raise ContextLengthError(
                    f"This model's maximum context length is {spec.max_length} tokens. However, input {index} "
                    f"has {len(row)} tokens. Please reduce the length of the input.",
                    spec.max_length,
                    "input",
                )
            if any(not 0 <= token < vocab for token in row):
                raise InvalidFieldError(f"input {index}: token ids must lie in [0, {vocab})", "input")
        return ids

    def _tokenizer(self, digest: str) -> Any:
        tokenizer = self._tokenizers.get(digest)
        if tokenizer is None:
            tokenizers = require("tokenizers", "embeddings", ModelImportError)
            tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json(self.models.registry.store, digest))
            tokenizer.no_truncation()  # too long is a 400 here, never a silent cut
            tokenizer.no_padding()
            self._tokenizers[digest] = tokenizer
        return tokenizer

    async def _run(self, request: EmbeddingRequest, spec: TextPreprocessing, rows: list[list[int]]) -> np.ndarray:
        served = self.models.get(request.model)
        length = -(-max(len(row) for row in rows) // PAD_TO) * PAD_TO
        ids = np.zeros((len(rows), length), np.int64)
        mask = np.zeros((len(rows), length), np.int64)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        names = [spec.name for spec in served.record.signature.inputs]
        inputs = {name: feed[name] for name in names if name in feed}
        if len(inputs) != len(names):
            missing = sorted(set(names) - set(feed))
            raise InvalidFieldError(
                f"model {request.model!r} takes inputs {missing} the embeddings path cannot fill", "model"
            )
        response = await self.inference.infer(InferenceRequest(request.model, inputs, headers=dict(request.headers)))
        hidden = response.outputs[spec.output] if spec.output else next(iter(response.outputs.values()))
        return pool(np.asarray(hidden, np.float32), mask, spec.pooling, spec.normalize)


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: str, normalize: bool) -> np.ndarray:
    """``[rows, tokens, width]`` token vectors -> ``[rows, width]``: masked mean or the first ([CLS])."""
    if pooling == "cls":
        vectors = hidden[:, 0, :]
    else:
        weights = mask[:, :, None].astype(np.float32)
        vectors = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return unit_length(vectors) if normalize else vectors.astype(np.float32)


def unit_length(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: np.ndarray = (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
    return result
