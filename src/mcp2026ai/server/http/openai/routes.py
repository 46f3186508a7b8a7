"""The OpenAI-compatible API: ``/v1/models``, ``/v1/completions``, ``/v1/chat/completions``,
``/v1/responses`` (responses.py, stateless), ``/v1/embeddings`` (embeddings.py), and vLLM's
``/tokenize`` and ``/detokenize`` (tokens.py), ``/v1/rerank`` and ``/v1/score`` (similarity.py),
``/v1/load_lora_adapter`` and ``/v1/unload_lora_adapter`` (lora.py).

The routes decode (codec.py), hand a neutral text request to the data plane's generation use case,
and encode what it streams back. A streamed answer is Server-Sent Events ending in ``data: [DONE]``;
a client that disconnects, streaming or not, aborts its generation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.dataplane.generation import VERSION_RESPONSE_HEADER, ResultCodes, TextGeneration, TextRequest
from mcp2026ai.dataplane.reasoning import ChoiceReasoning, ReasoningPlan, reasoning_plan
from mcp2026ai.dataplane.similarity import SimilarityHandlers
from mcp2026ai.dataplane.tool_parsers import resolve_parser
from mcp2026ai.errors import MCPError
from mcp2026ai.generation.grammar import after_reasoning
from mcp2026ai.generation.types import Delta
from mcp2026ai.protocol.v2_json import parse_json
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.errors import http_status
from mcp2026ai.server.http.openai import similarity, tokens
from mcp2026ai.server.http.openai.codec import (
    ChatCompletionRequest,
    ChatEncoder,
    CompletionEncoder,
    CompletionRequest,
    parse_request,
)
from mcp2026ai.server.http.openai.completions import EchoEncoder, PromptBatch, best_choices, start_completions
from mcp2026ai.server.http.openai.embeddings import embeddings_response, parse_embeddings
from mcp2026ai.server.http.openai.errors import openai_error, openai_error_document
from mcp2026ai.server.http.openai.lora import lora_routes
from mcp2026ai.server.http.openai.responses import create_response
from mcp2026ai.server.http.openai.tool_encoder import ToolChatEncoder
from mcp2026ai.server.http.openai.tools import ToolPlan
from mcp2026ai.server.http.streaming import DONE, SSE_HEADERS, collect_unless_gone, response_deltas, sse
from mcp2026ai.serving.llm_config import GenerationDefaults
from mcp2026ai.serving.llm_versions import ServedLLM

CODES = ResultCodes("openai", ok="200", cancelled="499", unexpected="500", of_error=lambda exc: str(http_status(exc)))
"""``protocol="openai"`` in the request metrics, with the HTTP status as the code."""


class OpenAIEndpoints:
    """Route handlers over the data plane's generation use case."""

    def __init__(self, plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> None:
        self.plane = plane
        self.config = config
        self.bodies = bodies
        self.similarity = SimilarityHandlers(plane.embeddings)

    async def models(self, request: Request) -> Response:
        data = [self._model_entry(served) for served in self.plane.generation.served()]
        return Response(orjson.dumps({"object": "list", "data": data}), media_type="application/json")

    async def model(self, request: Request) -> Response:
        try:
            served = self.plane.generation.model(request.path_params["model"])
        except MCPError as exc:
            return openai_error(exc)
        headers = {VERSION_RESPONSE_HEADER: served.record.version}
        return Response(orjson.dumps(self._model_entry(served)), media_type="application/json", headers=headers)

    async def tokenize(self, request: Request) -> Response:
        try:
            parsed = tokens.parse(tokens.TokenizeRequest, await self._text_document(request))
            ids, served = await self.plane.generation.tokenize(parsed.model, parsed.as_prompt())
        except MCPError as exc:
            return openai_error(exc)
        strs = [served.engine.tokenizer.token_text(token) for token in ids] if parsed.return_token_strs else None
        return _json(tokens.tokenize_document(ids, served.engine.max_len, strs))

    async def detokenize(self, request: Request) -> Response:
        try:
            parsed = tokens.parse(tokens.DetokenizeRequest, await self._text_document(request))
            text = await asyncio.to_thread(self.plane.generation.detokenize, parsed.model, parsed.tokens)
        except MCPError as exc:
            return openai_error(exc)
        return _json({"prompt": text})

    async def _text_document(self, request: Request) -> Any:
        """A text route's body, within the generation routes' body limit (``--limit max_body_bytes``)."""
        limit = min(self.config.max_json_bytes, self.plane.generation.limits.max_body_bytes)
        async with read_body(request, limit, self.bodies) as raw:
            return parse_json(raw)

    async def _document(self, request: Request) -> Any:
        async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
            return parse_json(raw)

    async def responses(self, request: Request) -> Response:
        try:
            document = await self._document(request)
        except MCPError as exc:
            return openai_error(exc)
        return await create_response(
            request, document, self.plane.generation, CODES, self.config.tool_call_parser, self._with_reasoning
        )

    async def embeddings(self, request: Request) -> Response:
        try:
            parsed = parse_embeddings(await self._document(request))
            headers = {key.lower(): value for key, value in request.headers.items()}
            result = await self.plane.embeddings.embed(parsed.request(headers))
        except MCPError as exc:
            return openai_error(exc)
        return embeddings_response(parsed, result)

    def _with_reasoning(self, request: TextRequest) -> tuple[TextRequest, ReasoningPlan | None]:
        """With ``--reasoning-parser``: how the answer starts, and its constraint applied after the reasoning."""
        if self.config.reasoning_parser is None:
            return request, None
        tokenizer = self.plane.generation.model(request.model).engine.tokenizer
        plan = reasoning_plan(self.config.reasoning_parser, tokenizer, request.prompt.template_kwargs)
        if plan is None or request.constraint is None:
            return request, plan
        return replace(request, constraint=after_reasoning(request.constraint, plan.inside)), plan

    def _model_entry(self, served: ServedLLM) -> dict[str, Any]:
        """A model as ``/v1/models`` lists it, with the sampling defaults a request that sets nothing gets."""
        return _model_entry(served, self.plane.generation.llms.defaults(served.record.name))

    def _tool_parser(self, plan: ToolPlan, generation: TextGeneration | PromptBatch) -> str:
        """The family format of the answer's tool calls (``--tool-call-parser``; auto: the template's)."""
        template = generation.tokenizer.template_source
        return resolve_parser(self.config.tool_call_parser, template, plan.constraint is not None)

    async def rerank(self, request: Request) -> Response:
        try:
            parsed = similarity.parse_body(similarity.RerankBody, await self._document(request), "/v1/rerank")
            result = await self.similarity.rerank(parsed.request(_headers(request)))
        except MCPError as exc:
            return openai_error(exc)
        return similarity.rerank_response(parsed, result)

    async def score(self, request: Request) -> Response:
        try:
            parsed = similarity.parse_body(similarity.ScoreBody, await self._document(request), "/v1/score")
            result = await self.similarity.score(parsed.request(_headers(request)))
        except MCPError as exc:
            return openai_error(exc)
        return similarity.score_response(parsed, result)

    async def completions(self, request: Request) -> Response:
        return await self._generate(request, chat=False)

    async def chat_completions(self, request: Request) -> Response:
        return await self._generate(request, chat=True)

    async def _generate(self, request: Request, chat: bool) -> Response:
        try:
            limits = self.plane.generation.limits
            async with read_body(request, min(self.config.max_json_bytes, limits.max_body_bytes), self.bodies) as raw:
                document = parse_json(raw)
            parsed = parse_request(ChatCompletionRequest if chat else CompletionRequest, document, limits)
            headers = {key.lower(): value for key, value in request.headers.items()}
            generation: TextGeneration | PromptBatch
            reasoning = None
            if chat:
                text_request, reasoning = self._with_reasoning(parsed.text_request(headers))
                generation = await self.plane.generation.start(text_request, CODES)
            else:
                generation = await start_completions(self.plane.generation, parsed.text_requests(headers), CODES)
        except MCPError as exc:
            return openai_error(exc)
        plan = parsed.tool_plan() if chat else None
        encoder = (
            ToolChatEncoder(parsed.model, generation.tokenizer, plan, self._tool_parser(plan, generation))
            if plan is not None and plan.parse
            else _encoder(parsed, generation)
        )
        if reasoning is not None and isinstance(encoder, ChatEncoder):
            encoder.reasoning = ChoiceReasoning(reasoning)
        logprobs = parsed.logprobs is not None if isinstance(parsed, CompletionRequest) else bool(parsed.logprobs)
        if parsed.stream:
            try:
                deltas = await response_deltas(request, generation)
            except MCPError as exc:
                return openai_error(exc)
            events = _events(generation, deltas, encoder, logprobs, parsed.include_usage)
            headers = {**SSE_HEADERS, **generation.answer_headers}
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        try:
            choices = await collect_unless_gone(request, generation, _choices(generation))
            if isinstance(parsed, CompletionRequest) and parsed.ranked:
                choices = best_choices(choices, generation.params.n, parsed.n, logprobs)
        except MCPError as exc:
            return openai_error(exc)
        body = encoder.response(choices, generation.usage, logprobs)
        return Response(orjson.dumps(body), media_type="application/json", headers=generation.answer_headers)


def _encoder(parsed: ChatCompletionRequest | CompletionRequest, generation: TextGeneration | PromptBatch) -> Any:
    if isinstance(parsed, ChatCompletionRequest):
        return ChatEncoder(parsed.model, generation.tokenizer)
    if parsed.echo:
        return EchoEncoder(parsed.model, generation, [prompt.text for prompt in parsed.prompts()], parsed.scores_only)
    return CompletionEncoder(parsed.model, generation.tokenizer)


def _choices(generation: TextGeneration | PromptBatch) -> int:
    return generation.choices if isinstance(generation, PromptBatch) else generation.params.n


async def _events(
    generation: TextGeneration | PromptBatch,
    deltas: AsyncIterator[Delta],
    encoder: CompletionEncoder,
    logprobs: bool,
    include_usage: bool,
) -> AsyncIterator[bytes]:
    try:
        async for delta in deltas:
            for chunk in encoder.chunks(delta, logprobs, include_usage):
                yield sse(chunk)
        if include_usage:
            yield sse(encoder.usage_chunk(generation.usage))
        yield DONE
    except MCPError as exc:
        yield sse(openai_error_document(exc))
        yield DONE
    finally:
        generation.abort()  # the client went away mid-stream (no-op once the stream ended)


def _headers(request: Request) -> dict[str, str]:
    return {key.lower(): value for key, value in request.headers.items()}


def _json(document: Any) -> Response:
    return Response(orjson.dumps(document), media_type="application/json")


def _model_entry(served: ServedLLM, defaults: GenerationDefaults) -> dict[str, Any]:
    return {
        "id": served.record.name,
        "object": "model",
        "created": int(served.record.created_at.timestamp()),
        "owned_by": "mcp2026ai",
        "max_model_len": served.engine.max_len,
        "sampling_defaults": defaults.fill({}),
        "version": served.record.version,
        "root": served.record.name,
        "parent": served.base,
    }


def openai_routes(plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> list[Route]:
    endpoints = OpenAIEndpoints(plane, config, bodies)
    return [
        Route("/v1/models", endpoints.models, methods=["GET"]),
        Route("/v1/models/{model}", endpoints.model, methods=["GET"]),
        Route("/v1/completions", endpoints.completions, methods=["POST"]),
        Route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"]),
        Route("/v1/responses", endpoints.responses, methods=["POST"]),
        Route("/v1/embeddings", endpoints.embeddings, methods=["POST"]),
        Route("/v1/rerank", endpoints.rerank, methods=["POST"]),
        Route("/v2/rerank", endpoints.rerank, methods=["POST"]),
        Route("/v1/score", endpoints.score, methods=["POST"]),
        Route("/tokenize", endpoints.tokenize, methods=["POST"]),
        Route("/detokenize", endpoints.detokenize, methods=["POST"]),
        *lora_routes(plane.llms, config, bodies),
    ]
