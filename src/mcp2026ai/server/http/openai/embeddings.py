"""OpenAI's ``POST /v1/embeddings`` over the data plane's embeddings use case (dataplane/embeddings.py).

``input`` is a string, a list of strings, a list of token ids or a list of such lists;
``encoding_format`` ``float`` (lists of numbers) or ``base64`` (the little-endian float32 bytes, as
OpenAI sends them and its client decodes them); ``dimensions`` where the model allows it; ``user``
is accepted (an identifier for abuse monitoring: nothing is kept). Any other field is a 400 naming it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import orjson
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from mcp2026ai.dataplane.embeddings import EmbeddingRequest, Embeddings
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import validated
from mcp2026ai.server.http.openai.parameters import refusal

MAX_INPUTS = 2048
"""OpenAI's own limit on inputs per request."""


class EmbeddingsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1)
    user: str | None = None

    def inputs(self) -> list[str | list[int]]:
        value = self.input
        if isinstance(value, str):
            return [value]
        if not value or len(value) > MAX_INPUTS:
            raise refusal("input", f"give 1 to {MAX_INPUTS} inputs (got {len(value)})")
        if all(isinstance(item, int) for item in value):
            return [[int(item) for item in value]]  # type: ignore[arg-type]
        return list(value)  # type: ignore[arg-type]

    def request(self, headers: Mapping[str, str]) -> EmbeddingRequest:
        return EmbeddingRequest(self.model, self.inputs(), self.dimensions, headers)


def parse_embeddings(document: Any) -> EmbeddingsBody:
    if not isinstance(document, dict):
        raise InvalidArgumentError("the request body must be a JSON object")
    for name in document:
        if name not in EmbeddingsBody.model_fields:
            raise refusal(name, "not a parameter of /v1/embeddings this server knows")
    return validated(EmbeddingsBody, document)


def _encoded(vector: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    values: list[float] = vector.tolist()
    return values


def embeddings_response(body: EmbeddingsBody, result: Embeddings) -> Response:
    data = [
        {"object": "embedding", "index": index, "embedding": _encoded(vector, body.encoding_format)}
        for index, vector in enumerate(result.vectors)
    ]
    usage = {"prompt_tokens": result.prompt_tokens, "total_tokens": result.prompt_tokens}
    document = {"object": "list", "data": data, "model": body.model, "usage": usage}
    return Response(orjson.dumps(document), media_type="application/json")
