"""Rerank and score as a use case: a sentence encoder's embeddings compared by cosine similarity.

vLLM serves ``/v1/rerank`` and ``/v1/score`` with cross-encoders or, for embedding models, with the
cosine of the two texts' embeddings; this server does the latter with the sentence encoders of
``/v1/embeddings`` (dataplane/embeddings.py: tokenized, run on the tensor path, pooled). Every text is
embedded once per request, vectors are scaled to unit length, and a pair's score is their dot
product: the cosine similarity sentence-transformers' ``util.cos_sim`` gives. The encoder's
``max_length`` bounds each text (400 ``context_length_exceeded`` above it); :data:`MAX_TEXTS` bounds
the texts of one request (Cohere's limit on documents).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mcp2026ai.dataplane.embeddings import EmbeddingHandlers, EmbeddingRequest, unit_length
from mcp2026ai.errors import InvalidFieldError

MAX_TEXTS = 1000
"""Documents of one rerank, or pairs of one score request."""


@dataclass(frozen=True)
class Similarities:
    scores: np.ndarray
    """float32, one per document (rerank) or pair (score), in the request's order."""
    prompt_tokens: int


@dataclass(frozen=True)
class RerankRequest:
    model: str
    query: str
    documents: Sequence[str]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoreRequest:
    model: str
    first: Sequence[str]
    """One text (scored against every second text) or as many as ``second``."""
    second: Sequence[str]
    headers: Mapping[str, str] = field(default_factory=dict)


class SimilarityHandlers:
    """Rerank and score over the embeddings use case (see the module docstring)."""

    def __init__(self, embeddings: EmbeddingHandlers) -> None:
        self.embeddings = embeddings

    async def rerank(self, request: RerankRequest) -> Similarities:
        _check_texts(request.documents, "documents")
        _check_texts([request.query], "query")
        vectors, tokens = await self._vectors(request.model, [request.query, *request.documents], request.headers)
        return Similarities(vectors[1:] @ vectors[0], tokens)

    async def score(self, request: ScoreRequest) -> Similarities:
        _check_texts(request.first, "text_1")
        _check_texts(request.second, "text_2")
        if len(request.first) not in (1, len(request.second)):
            raise InvalidFieldError(
                f"text_1 has {len(request.first)} texts: give one, or as many as text_2 ({len(request.second)})",
                "text_1",
            )
        vectors, tokens = await self._vectors(request.model, [*request.first, *request.second], request.headers)
        first, second = vectors[: len(request.first)], vectors[len(request.first) :]
        return Similarities((first * second).sum(axis=1).astype(np.float32), tokens)

    async def _vectors(self, model: str, texts: list[str], headers: Mapping[str, str]) -> tuple[np.ndarray, int]:
        embedded = await self.embeddings.embed(EmbeddingRequest(model, texts, headers=headers))
        return unit_length(embedded.vectors), embedded.prompt_tokens


def _check_texts(texts: Sequence[str], param: str) -> None:
    if not texts:
        raise InvalidFieldError(f"{param}: give at least one text", param)
    if len(texts) > MAX_TEXTS:
        raise InvalidFieldError(f"{param}: at most {MAX_TEXTS} texts per request (got {len(texts)})", param)
    for index, text in enumerate(texts):
        if not text.strip():
            raise InvalidFieldError(f"{param}[{index}] is empty", param)
