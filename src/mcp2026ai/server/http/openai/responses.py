"""OpenAI's Responses API, stateless: ``POST /v1/responses`` (request: responses_request.py).

One generation per request, answered as one assistant message with one ``output_text`` part. Streamed,
it is the event sequence OpenAI sends (each event ``event: <type>`` + ``data: <json>`` with a rising
``sequence_number``): ``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` per text delta,
``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done`` and
``response.completed`` (``response.incomplete`` when ``max_output_tokens`` cut it) with usage; an
error after the stream began is an ``error`` event. Nothing is stored: the id names nothing later.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mcp2026ai.dataplane.generation import GenerationHandlers, ResultCodes, TextGeneration
from mcp2026ai.errors import MCPError
from mcp2026ai.generation.types import FinishReason, Usage
from mcp2026ai.server.http.openai.codec import new_id
from mcp2026ai.server.http.openai.errors import openai_error, openai_error_document
from mcp2026ai.server.http.openai.responses_request import ResponsesRequest, parse_responses_request
from mcp2026ai.server.http.streaming import SSE_HEADERS, collect_unless_gone


def usage_document(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


class ResponseEncoder:
    """The response document and its stream events for one request."""

    def __init__(self, request: ResponsesRequest) -> None:
        self.request = request
        self.id = new_id("resp")
        self.message_id = new_id("msg")
        self.created_at = int(time.time())
        self.sequence = 0

    def message(self, text: str, status: str) -> dict[str, Any]:
        content = [] if status == "in_progress" else [self.part(text)]
        return {"id": self.message_id, "type": "message", "status": status, "role": "assistant", "content": content}

    @staticmethod
    def part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def response(self, status: str, text: str | None = None, usage: Usage | None = None) -> dict[str, Any]:
        finished = status in ("completed", "incomplete")
        request = self.request
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": int(time.time()) if finished else None,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "instructions": request.instructions,
            "max_output_tokens": request.max_output_tokens,
            "model": request.model,
            "output": [self.message(text or "", "completed" if finished else status)] if text is not None else [],
            "parallel_tool_calls": bool(request.parallel_tool_calls),
            "previous_response_id": None,
            "store": False,
            "temperature": request.temperature,
            "text": {"format": {"type": "text"}},
            "tool_choice": "none",
            "tools": [],
            "top_p": request.top_p,
            "truncation": "disabled",
            "usage": usage_document(usage) if usage is not None else None,
            "user": request.user,
            "metadata": {},
        }

    def event(self, kind: str, **fields: Any) -> bytes:
        document = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(document) + b"\n\n"

    def text_event(self, kind: str, **fields: Any) -> bytes:
        return self.event(kind, item_id=self.message_id, output_index=0, content_index=0, **fields)


def final_status(reason: FinishReason | None) -> str:
    return "incomplete" if reason == FinishReason.LENGTH else "completed"


async def _events(generation: TextGeneration, encoder: ResponseEncoder) -> AsyncIterator[bytes]:
    text, reason = "", None
    try:
        yield encoder.event("response.created", response=encoder.response("in_progress"))
        yield encoder.event("response.in_progress", response=encoder.response("in_progress"))
        yield encoder.event("response.output_item.added", output_index=0, item=encoder.message("", "in_progress"))
        yield encoder.text_event("response.content_part.added", part=encoder.part(""))
        async for delta in generation:
            reason = delta.finish_reason or reason
            if delta.text:
                text += delta.text
                yield encoder.text_event("response.output_text.delta", delta=delta.text, logprobs=[])
        yield encoder.text_event("response.output_text.done", text=text, logprobs=[])
        yield encoder.text_event("response.content_part.done", part=encoder.part(text))
        yield encoder.event("response.output_item.done", output_index=0, item=encoder.message(text, "completed"))
        status = final_status(reason)
        yield encoder.event(f"response.{status}", response=encoder.response(status, text, generation.usage))
    except MCPError as exc:
        error = openai_error_document(exc)["error"]
        yield encoder.event("error", code=error["code"], message=error["message"], param=error["param"])
    finally:
        generation.abort()  # the client went away mid-stream (no-op once the stream ended)


async def create_response(
    request: Request, document: Any, handlers: GenerationHandlers, codes: ResultCodes
) -> Response:
    """``POST /v1/responses`` once the body is read: a response document, or its event stream."""
    try:
        parsed = parse_responses_request(document)
        headers = {key.lower(): value for key, value in request.headers.items()}
        generation = await handlers.start(parsed.text_request(headers), codes)
    except MCPError as exc:
        return openai_error(exc)
    encoder = ResponseEncoder(parsed)
    if parsed.stream:
        return StreamingResponse(_events(generation, encoder), media_type="text/event-stream", headers=SSE_HEADERS)
    try:
        (choice,) = await collect_unless_gone(request, generation, 1)
    except MCPError as exc:
        return openai_error(exc)
    body = encoder.response(final_status(choice.finish_reason), choice.text, generation.usage)
    return Response(orjson.dumps(body), media_type="application/json")
