"""OpenAI-compatible text generation (``/v1/models``, ``/v1/completions``, ``/v1/chat/completions``)
and Triton's generate extension (``/v2/models/{m}/generate`` and ``/generate_stream``), on the same
server and port as KServe v2.

Errors use OpenAI's JSON (``{"error": {"message", "type", "param", "code"}}``) on the /v1 routes and
the v2 error JSON on the Triton routes, with the status of the domain error (server/http/errors.py).
A streamed answer is Server-Sent Events ending in ``data: [DONE]``; a client that disconnects,
streaming or not, aborts its generation (its KV slots free within one engine step).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane, parse_sla_class
from mcp2026ai.errors import (
    ClientGoneError,
    InvalidArgumentError,
    MCPError,
    NotFoundError,
    OverloadedError,
    bounded_message,
)
from mcp2026ai.generation.engine import Engine
from mcp2026ai.generation.service import ServedLLM
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.types import Choice, GenerationRequest, SamplingParams
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.errors import error_response, http_status
from mcp2026ai.server.http.openai_codec import (
    ChatCompletionRequest,
    ChatEncoder,
    CompletionEncoder,
    CompletionRequest,
    new_id,
    parse_request,
    validated,
)

_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_DONE = b"data: [DONE]\n\n"
_TRITON_FIELDS = {
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


def openai_error(error: MCPError) -> Response:
    """OpenAI's error document with the domain error's HTTP status (and Retry-After when overloaded)."""
    status = http_status(error)
    kind = "invalid_request_error" if status < 500 else "server_error"
    code = "model_not_found" if isinstance(error, NotFoundError) else None
    if isinstance(error, OverloadedError):
        kind, code = "rate_limit_error", "rate_limit_exceeded"
    headers = {"Retry-After": str(max(1, round(error.retry_after_s)))} if isinstance(error, OverloadedError) else {}
    body = {"error": {"message": bounded_message(error), "type": kind, "param": None, "code": code}}
    return Response(orjson.dumps(body), status, headers, media_type="application/json")


def _sse(document: Any) -> bytes:
    return b"data: " + orjson.dumps(document) + b"\n\n"


class GenerationEndpoints:
    """Route handlers over the data plane's generation engines."""

    def __init__(self, plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> None:
        self.plane = plane
        self.config = config
        self.bodies = bodies

    # /v1 ----------------------------------------------------------------------------------------
    async def models(self, request: Request) -> Response:
        data = [_model_entry(self.plane.generation.get(name)) for name in self.plane.generation.names()]
        return Response(orjson.dumps({"object": "list", "data": data}), media_type="application/json")

    async def model(self, request: Request) -> Response:
        try:
            served = self.plane.generation.get(request.path_params["model"])
        except MCPError as exc:
            return openai_error(exc)
        return Response(orjson.dumps(_model_entry(served)), media_type="application/json")

    async def completions(self, request: Request) -> Response:
        return await self._openai(request, chat=False)

    async def chat_completions(self, request: Request) -> Response:
        return await self._openai(request, chat=True)

    async def _openai(self, request: Request, chat: bool) -> Response:
        try:
            async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
                document = _json(raw)
            parsed = parse_request(ChatCompletionRequest if chat else CompletionRequest, document)
            served = self.plane.generation.get(parsed.model)
            engine = served.engine
            ids = parsed.prompt_ids(engine.tokenizer)
            defaults = self.plane.generation.defaults(parsed.model)
            params = parsed.chat_sampling(defaults) if chat else parsed.completion_sampling(defaults)
            stream = engine.submit(self._request(request, ids, params))
        except MCPError as exc:
            return openai_error(exc)
        encoder = (ChatEncoder if chat else CompletionEncoder)(parsed.model, engine.tokenizer)
        logprobs = params.logprobs is not None
        if parsed.stream:
            events = self._openai_events(stream, encoder, logprobs, parsed.include_usage)
            return StreamingResponse(events, media_type="text/event-stream", headers=_SSE_HEADERS)
        try:
            choices = await _collect_unless_gone(request, stream, params.n)
        except MCPError as exc:
            return openai_error(exc)
        body = encoder.response(choices, stream.usage, logprobs)
        return Response(orjson.dumps(body), media_type="application/json")

    async def _openai_events(
        self, stream: GenerationStream, encoder: CompletionEncoder, logprobs: bool, include_usage: bool
    ) -> AsyncIterator[bytes]:
        try:
            async for delta in stream:
                yield _sse(encoder.chunk(delta, logprobs, include_usage))
            if include_usage:
                yield _sse(encoder.usage_chunk(stream.usage))
            yield _DONE
        except MCPError as exc:
            yield _sse(orjson.loads(openai_error(exc).body))
            yield _DONE
        finally:
            stream.abort()  # the client went away mid-stream (no-op once the stream ended)

    # Triton's generate extension ----------------------------------------------------------------
    async def generate(self, request: Request) -> Response:
        served, stream = await self._triton_submit(request)
        try:
            choices = await _collect_unless_gone(request, stream, 1)
        except MCPError as exc:
            return error_response(exc)
        body = _triton_output(served, choices[0].text)
        return Response(orjson.dumps(body), media_type="application/json")

    async def generate_stream(self, request: Request) -> Response:
        served, stream = await self._triton_submit(request)

        async def events() -> AsyncIterator[bytes]:
            try:
                async for delta in stream:
                    if delta.text or delta.finish_reason is None:
                        yield _sse(_triton_output(served, delta.text))
            except MCPError as exc:
                yield _sse({"error": bounded_message(exc)})
            finally:
                stream.abort()

        return StreamingResponse(events(), media_type="text/event-stream", headers=_SSE_HEADERS)

    async def _triton_submit(self, request: Request) -> tuple[ServedLLM, GenerationStream]:
        """Raises domain errors: the app's handler answers them with the v2 error JSON."""
        served = self.plane.generation.get(request.path_params["model"])
        async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
            document = _json(raw)
        if not isinstance(document, dict) or not isinstance(document.get("text_input"), str):
            raise InvalidArgumentError("generate needs a JSON object with a string 'text_input'")
        nested = document.get("parameters") or {}
        if not isinstance(nested, dict):
            raise InvalidArgumentError("'parameters' must be a JSON object")
        fields = {key: value for key, value in {**document, **nested}.items() if key in _TRITON_FIELDS}
        if isinstance(fields.get("stop"), str):
            fields["stop"] = [fields["stop"]]
        defaults = self.plane.generation.defaults(served.record.name)
        params: SamplingParams = validated(SamplingParams, defaults.fill(fields))
        engine: Engine = served.engine
        ids = engine.tokenizer.encode(document["text_input"])
        return served, engine.submit(self._request(request, ids, params))

    def _request(self, request: Request, ids: list[int], params: SamplingParams) -> GenerationRequest:
        headers = {key.lower(): value for key, value in request.headers.items()}
        raw_class = headers.get("x-sla-class")
        sla_class = parse_sla_class(raw_class) if raw_class else SLAClass.BEST_EFFORT
        return GenerationRequest(new_id("gen"), ids, params, sla_class, headers)


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidArgumentError(f"request body is not valid JSON ({exc})") from None


def _model_entry(served: ServedLLM) -> dict[str, Any]:
    return {
        "id": served.record.name,
        "object": "model",
        "created": int(served.record.created_at.timestamp()),
        "owned_by": "mcp2026ai",
        "max_model_len": served.engine.max_len,
    }


def _triton_output(served: ServedLLM, text: str) -> dict[str, Any]:
    return {"model_name": served.record.name, "model_version": served.record.version, "text_output": text}


async def _collect_unless_gone(request: Request, stream: GenerationStream, choices: int) -> list[Choice]:
    """The whole answer; if the client disconnects first, the generation is aborted (ClientGone)."""
    collecting = asyncio.ensure_future(stream.collect(choices))
    watching = asyncio.ensure_future(_disconnected(request.receive))
    try:
        await asyncio.wait({collecting, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
    if not collecting.done():
        stream.abort()
        with contextlib.suppress(MCPError):
            await collecting
        raise ClientGoneError("the client disconnected before its answer was ready")
    return collecting.result()


async def _disconnected(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def generation_routes(plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> list[Route]:
    endpoints = GenerationEndpoints(plane, config, bodies)
    return [
        Route("/v1/models", endpoints.models, methods=["GET"]),
        Route("/v1/models/{model}", endpoints.model, methods=["GET"]),
        Route("/v1/completions", endpoints.completions, methods=["POST"]),
        Route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"]),
        Route("/v2/models/{model}/generate", endpoints.generate, methods=["POST"]),
        Route("/v2/models/{model}/generate_stream", endpoints.generate_stream, methods=["POST"]),
        Route("/v2/models/{model}/versions/{version}/generate", endpoints.generate, methods=["POST"]),
        Route("/v2/models/{model}/versions/{version}/generate_stream", endpoints.generate_stream, methods=["POST"]),
    ]
