"""Triton's generate extension: ``/v2/models/{m}[/versions/{v}]/generate`` and ``/generate_stream``.

Errors use the v2 error JSON with the status of the domain error (server/http/errors.py); the stream is
Server-Sent Events of ``{"model_name", "model_version", "text_output"}`` documents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.dataplane.generation import Prompt, ResultCodes, TextGeneration, TextRequest
from mcp2026ai.errors import InvalidArgumentError, InvalidFieldError, MCPError, bounded_message
from mcp2026ai.messages import validated
from mcp2026ai.protocol.v2_json import parse_json
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.errors import error_response, http_status
from mcp2026ai.server.http.streaming import SSE_HEADERS, collect_unless_gone, response_deltas, sse
from mcp2026ai.server.http.structured import constraint_of
from mcp2026ai.serving.limits import GenerationLimits

CODES = ResultCodes("http", ok="200", cancelled="499", unexpected="500", of_error=lambda exc: str(http_status(exc)))


class GenerateParameters(BaseModel):
    """The sampling fields the generate routes read, at the top level or inside ``parameters``: strict
    types (``"3"`` or ``true`` is no integer), no NaN or Infinity; the ranges are SamplingParams'. The
    structured-output fields (``response_format``, ``guided_json`` ... server/http/structured.py) are
    read inside ``parameters``."""

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool | None = None


def text_request(model: str, document: Any, headers: dict[str, str], limits: GenerationLimits) -> TextRequest:
    """A generate request's JSON as a neutral text request (max_tokens, when neither the request nor the
    model's config sets it, is the limits' bounded default)."""
    if not isinstance(document, dict) or not isinstance(document.get("text_input"), str):
        raise InvalidArgumentError("generate needs a JSON object with a string 'text_input'")
    nested = document.get("parameters")
    nested = {} if nested is None else nested
    if not isinstance(nested, dict):
        raise InvalidFieldError("parameters: must be a JSON object", "parameters")
    parsed = validated(GenerateParameters, {**document, **nested})
    fields = parsed.model_dump(exclude_none=True)
    if isinstance(fields.get("stop"), str):
        fields["stop"] = [fields["stop"]]
    prompt = Prompt(text=document["text_input"])
    constraint = constraint_of(nested, "parameters.")
    return TextRequest(
        model,
        prompt,
        fields,
        limits.default_max_tokens,
        headers.get("x-sla-class"),
        headers,
        constraint=constraint,
    )


class GenerateEndpoints:
    def __init__(self, plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> None:
        self.plane = plane
        self.config = config
        self.bodies = bodies

    async def generate(self, request: Request) -> Response:
        generation = await self._start(request)
        try:
            choices = await collect_unless_gone(request, generation, 1)
        except MCPError as exc:
            return error_response(exc)
        body = orjson.dumps(_output(generation, choices[0].text))
        return Response(body, media_type="application/json", headers=generation.answer_headers)

    async def generate_stream(self, request: Request) -> Response:
        generation = await self._start(request)
        deltas = await response_deltas(request, generation)  # under a TTFT budget: a refusal is a status

        async def events() -> AsyncIterator[bytes]:
            try:
                async for delta in deltas:
                    if delta.text or delta.finish_reason is None:
                        yield sse(_output(generation, delta.text))
            except MCPError as exc:
                yield sse({"error": bounded_message(exc)})
            finally:
                generation.abort()

        headers = {**SSE_HEADERS, **generation.answer_headers}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def _start(self, request: Request) -> TextGeneration:
        """Raises domain errors: the app's handler answers them with the v2 error JSON."""
        model = request.path_params["model"]
        self.plane.generation.model(model)  # an unknown model is a 404 before the body is read
        limits = self.plane.generation.limits
        async with read_body(request, min(self.config.max_json_bytes, limits.max_body_bytes), self.bodies) as raw:
            document = parse_json(raw)
        headers = {key.lower(): value for key, value in request.headers.items()}
        text = replace(text_request(model, document, headers, limits), version=request.path_params.get("version"))
        return await self.plane.generation.start(text, CODES)


def _output(generation: TextGeneration, text: str) -> dict[str, Any]:
    record = generation.served.record
    return {"model_name": record.name, "model_version": record.version, "text_output": text}


def generate_routes(plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> list[Route]:
    endpoints = GenerateEndpoints(plane, config, bodies)
    return [
        Route("/v2/models/{model}/generate", endpoints.generate, methods=["POST"]),
        Route("/v2/models/{model}/generate_stream", endpoints.generate_stream, methods=["POST"]),
        Route("/v2/models/{model}/versions/{version}/generate", endpoints.generate, methods=["POST"]),
        Route("/v2/models/{model}/versions/{version}/generate_stream", endpoints.generate_stream, methods=["POST"]),
    ]
