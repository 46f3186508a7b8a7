"""vLLM's ``POST /v1/rerank`` (Jina- and Cohere-compatible, also at ``/v2/rerank``) and
``POST /v1/score``, over the data plane's similarity use case (dataplane/similarity.py).

Rerank: ``{"model", "query", "documents": [str | {"text"}], "top_n", "return_documents"}`` ->
``{"id", "model", "usage", "results": [{"index", "relevance_score", "document": {"text"}}]}``, best
first, the first ``top_n`` (0 or absent: all). Score: ``{"model", "text_1", "text_2"}`` (a string or a
list each; one ``text_1`` is scored against every ``text_2``) -> ``{"id", "object": "list", "created",
"model", "data": [{"index", "object": "score", "score"}], "usage"}``. Any other field is a 400 naming it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from mcp2026ai.dataplane.similarity import RerankRequest, ScoreRequest, Similarities
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import validated
from mcp2026ai.server.http.openai.parameters import refusal


class TextDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str


class RerankBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    query: str
    documents: list[str | TextDocument]
    top_n: int | None = Field(None, ge=0)
    return_documents: bool = True
    user: str | None = None

    def texts(self) -> list[str]:
        return [item if isinstance(item, str) else item.text for item in self.documents]

    def request(self, headers: Mapping[str, str]) -> RerankRequest:
        return RerankRequest(self.model, self.query, self.texts(), headers)


class ScoreBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    text_1: str | list[str]
    text_2: str | list[str]
    user: str | None = None

    def request(self, headers: Mapping[str, str]) -> ScoreRequest:
        first = [self.text_1] if isinstance(self.text_1, str) else self.text_1
        second = [self.text_2] if isinstance(self.text_2, str) else self.text_2
        return ScoreRequest(self.model, first, second, headers)


def parse_body(model: type[BaseModel], document: Any, route: str) -> Any:
    if not isinstance(document, dict):
        raise InvalidArgumentError("the request body must be a JSON object")
    for name in document:
        if name not in model.model_fields:
            raise refusal(name, f"not a parameter of {route} this server knows")
    return validated(model, document)


def _usage(result: Similarities) -> dict[str, int]:
    return {"prompt_tokens": result.prompt_tokens, "total_tokens": result.prompt_tokens}


def rerank_response(body: RerankBody, result: Similarities) -> Response:
    texts = body.texts()
    order = sorted(range(len(texts)), key=lambda index: -float(result.scores[index]))
    if body.top_n:
        order = order[: body.top_n]
    results = []
    for index in order:
        entry: dict[str, Any] = {"index": index, "relevance_score": float(result.scores[index])}
        if body.return_documents:
            entry["document"] = {"text": texts[index]}
        results.append(entry)
    document = {"id": f"rerank-{uuid.uuid4().hex}", "model": body.model, "usage": _usage(result), "results": results}
    return Response(orjson.dumps(document), media_type="application/json")


def score_response(body: ScoreBody, result: Similarities) -> Response:
    data = [{"index": index, "object": "score", "score": float(score)} for index, score in enumerate(result.scores)]
    document = {
        "id": f"score-{uuid.uuid4().hex}",
        "object": "list",
        "created": int(time.time()),
        "model": body.model,
        "data": data,
        "usage": _usage(result),
    }
    return Response(orjson.dumps(document), media_type="application/json")
