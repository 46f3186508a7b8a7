"""Triton's generate extension: ``/v2/models/{m}[/versions/{v}]/generate`` and ``/generate_stream``.

Errors use the v2 error JSON with the status of the domain error (server/http/errors.py); the stream is
Server-Sent Events of ``{"model_name", "model_version", "text_output"}`` documents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.dataplane.generation import Prompt, ResultCodes, TextGeneration, TextRequest
from mcp2026ai.errors import InvalidArgumentError, MCPError, bounded_message
from mcp2026ai.protocol.v2_json import parse_json
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.errors import error_response, http_status
from mcp2026ai.server.http.streaming import SSE_HEADERS, collect_unless_gone, sse
from mcp2026ai.server.http.structured import constraint_of

CODES = ResultCodes("http", ok="200", cancelled="499", unexpected="500", of_error=lambda exc: str(http_status(exc)))
SAMPLING_FIELDS = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "repetition_penalty",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "stop",
        "stop_token_ids",
        "ignore_eos",
    }
)
"""The sampling fields the generate routes read, at the top level or inside ``parameters``; the
structured-output fields (``response_format``, ``guided_json`` ... server/http/structured.py) are
read inside ``parameters``."""


def text_request(model: str, document: Any, headers: dict[str, str]) -> TextRequest:
    """A generate request's JSON as a neutral text request."""
    if not isinstance(document, dict) or not isinstance(document.get("text_input"), str):
        raise InvalidArgumentError("generate needs a JSON object with a string 'text_input'")
    nested = document.get("parameters") or {}
    if not isinstance(nested, dict):
        raise InvalidArgumentError("'parameters' must be a JSON object")
    fields = {key: value for key, value in {**document, **nested}.items() if key in SAMPLING_FIELDS}
    if isinstance(fields.get("stop"), str):
        fields["stop"] = [fields["stop"]]
    prompt = Prompt(text=document["text_input"])
    constraint = constraint_of(nested, "parameters.")
    return TextRequest(
        model, prompt, fields, sla_class=headers.get("x-sla-class"), headers=headers, constraint=constraint
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
        return Response(orjson.dumps(_output(generation, choices[0].text)), media_type="application/json")

    async def generate_stream(self, request: Request) -> Response:
        generation = await self._start(request)

        async def events() -> AsyncIterator[bytes]:
            try:
                async for delta in generation:
                    if delta.text or delta.finish_reason is None:
                        yield sse(_output(generation, delta.text))
            except MCPError as exc:
                yield sse({"error": bounded_message(exc)})
            finally:
                generation.abort()

        return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)

    async def _start(self, request: Request) -> TextGeneration:
        """Raises domain errors: the app's handler answers them with the v2 error JSON."""
        model = request.path_params["model"]
        self.plane.generation.model(model)  # an unknown model is a 404 before the body is read
        async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
            document = parse_json(raw)
        headers = {key.lower(): value for key, value in request.headers.items()}
        return await self.plane.generation.start(text_request(model, document, headers), CODES)


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
