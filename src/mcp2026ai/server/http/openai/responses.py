"""OpenAI's Responses API, stateless: ``POST /v1/responses`` (request: responses_request.py).

One generation per request, answered as one assistant message with one ``output_text`` part. Streamed,
it is the event sequence OpenAI sends (each event ``event: <type>`` + ``data: <json>`` with a rising
``sequence_number``): ``response.created``, ``response.in_progress``, ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta`` per text delta,
``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done`` and
``response.completed`` (``response.incomplete`` when ``max_output_tokens`` cut it) with usage; an
error after the stream began is an ``error`` event. Nothing is stored: the id names nothing later.
With function tools (responses_tools.py) the calls are ``function_call`` output items; streamed, the
text is parsed whole first and each item then sent with its events (``response.function_call_arguments.*``
for a call). With ``--reasoning-parser`` the ``<think>`` text is a ``reasoning`` item first (its
``reasoning_text`` content; streamed as ``response.reasoning_text.delta``/``.done``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from mcp2026ai.dataplane.generation import GenerationHandlers, ResultCodes, TextGeneration, TextRequest
from mcp2026ai.dataplane.reasoning import ReasoningPlan, reasoning_token_count, split_reasoning
from mcp2026ai.dataplane.tool_parsers import AUTO, new_parser, parse_whole, resolve_parser
from mcp2026ai.errors import MCPError
from mcp2026ai.generation.types import Delta, FinishReason, Usage
from mcp2026ai.server.http.openai.codec import new_id
from mcp2026ai.server.http.openai.errors import openai_error, openai_error_document
from mcp2026ai.server.http.openai.responses_request import ResponsesRequest, parse_responses_request
from mcp2026ai.server.http.openai.responses_tools import function_call_item
from mcp2026ai.server.http.openai.tools import ToolPlan
from mcp2026ai.server.http.streaming import SSE_HEADERS, collect_unless_gone, response_deltas

ReasoningStep = Callable[[TextRequest], tuple[TextRequest, ReasoningPlan | None]]


def usage_document(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


class ResponseEncoder:
    """The response document and its stream events for one request."""

    def __init__(
        self,
        request: ResponsesRequest,
        plan: ToolPlan | None = None,
        parser: str = "hermes",
        reasoning: ReasoningPlan | None = None,
    ) -> None:
        self.request = request
        self.reasoning = reasoning
        """Set with ``--reasoning-parser``: the answer's ``<think>`` text becomes a reasoning item."""
        self.plan = plan if plan is not None and plan.parse else None
        """The tool calls to parse out of the text (``tool_choice`` other than none)."""
        self.parser = parser
        """The family format of those calls (dataplane/tool_parsers.py)."""
        self.id = new_id("resp")
        self.message_id = new_id("msg")
        self.reasoning_id = new_id("rs")
        self.created_at = int(time.time())
        self.sequence = 0

    def count_reasoning(self, usage: Usage, token_ids: Sequence[int], decode: Callable[[Sequence[int]], str]) -> Usage:
        """``usage`` with the answer's reasoning tokens counted (with a reasoning parser)."""
        if self.reasoning is not None:
            usage.reasoning_tokens = reasoning_token_count(self.reasoning, token_ids, decode)
        return usage

    def message(self, text: str, status: str) -> dict[str, Any]:
        content = [] if status == "in_progress" else [self.part(text)]
        return {"id": self.message_id, "type": "message", "status": status, "role": "assistant", "content": content}

    @staticmethod
    def part(text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def output(self, text: str) -> list[dict[str, Any]]:
        """The answer's output items: its reasoning, its message (unless it is only tool calls), its calls."""
        reasoning, text = split_reasoning(self.reasoning, text) if self.reasoning is not None else (None, text)
        thought = [reasoning_item(self.reasoning_id, reasoning)] if reasoning else []
        if self.plan is None:
            return [*thought, self.message(text, "completed")]
        content, calls = parse_whole(new_parser(self.parser, self.plan.max_calls, self.plan.tools), text)
        items = [self.message(content, "completed")] if content is not None and (content or not calls) else []
        return thought + items + [function_call_item(call) for call in calls]

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
            "output": self.output(text) if text is not None else [],
            "parallel_tool_calls": request.parallel_tool_calls is not False,
            "previous_response_id": None,
            "store": False,
            "temperature": request.temperature,
            "text": {"format": {"type": "text"}},
            "tool_choice": request.tool_choice or ("auto" if request.tools else "none"),
            "tools": request.tools or [],
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


def reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    """A reasoning output item, as OpenAI's open-weight models' reasoning text is answered."""
    return {"id": item_id, "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": text}]}


def final_status(reason: FinishReason | None) -> str:
    return "incomplete" if reason == FinishReason.LENGTH else "completed"


async def _events(
    generation: TextGeneration, deltas: AsyncIterator[Delta], encoder: ResponseEncoder
) -> AsyncIterator[bytes]:
    text, reason = "", None
    try:
        yield encoder.event("response.created", response=encoder.response("in_progress"))
        yield encoder.event("response.in_progress", response=encoder.response("in_progress"))
        yield encoder.event("response.output_item.added", output_index=0, item=encoder.message("", "in_progress"))
        yield encoder.text_event("response.content_part.added", part=encoder.part(""))
        async for delta in deltas:
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


async def _buffered_events(
    generation: TextGeneration, deltas: AsyncIterator[Delta], encoder: ResponseEncoder
) -> AsyncIterator[bytes]:
    """With tools the text is parsed whole, then sent as its output items, each with its events."""
    text, reason, token_ids = "", None, []
    try:
        yield encoder.event("response.created", response=encoder.response("in_progress"))
        yield encoder.event("response.in_progress", response=encoder.response("in_progress"))
        async for delta in deltas:
            reason, text = delta.finish_reason or reason, text + delta.text
            token_ids += delta.token_ids
        for index, item in enumerate(encoder.output(text)):
            for event in _item_events(encoder, index, item):
                yield event
        status = final_status(reason)
        usage = encoder.count_reasoning(generation.usage, token_ids, generation.tokenizer.decode)
        yield encoder.event(f"response.{status}", response=encoder.response(status, text, usage))
    except MCPError as exc:
        error = openai_error_document(exc)["error"]
        yield encoder.event("error", code=error["code"], message=error["message"], param=error["param"])
    finally:
        generation.abort()


def _item_events(encoder: ResponseEncoder, index: int, item: dict[str, Any]) -> list[bytes]:
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "reasoning":
        text = item["content"][0]["text"]
        return [
            encoder.event("response.output_item.added", output_index=index, item={**item, "content": []}),
            encoder.event("response.reasoning_text.delta", **where, content_index=0, delta=text),
            encoder.event("response.reasoning_text.done", **where, content_index=0, text=text),
            encoder.event("response.output_item.done", output_index=index, item=item),
        ]
    if item["type"] == "function_call":
        return [
            encoder.event("response.output_item.added", output_index=index, item={**item, "status": "in_progress"}),
            encoder.event("response.function_call_arguments.delta", **where, delta=item["arguments"]),
            encoder.event("response.function_call_arguments.done", **where, arguments=item["arguments"]),
            encoder.event("response.output_item.done", output_index=index, item=item),
        ]
    part = item["content"][0]
    return [
        encoder.event("response.output_item.added", output_index=index, item={**item, "status": "in_progress"}),
        encoder.event("response.content_part.added", **where, content_index=0, part=encoder.part("")),
        encoder.event("response.output_text.delta", **where, content_index=0, delta=part["text"], logprobs=[]),
        encoder.event("response.output_text.done", **where, content_index=0, text=part["text"], logprobs=[]),
        encoder.event("response.content_part.done", **where, content_index=0, part=part),
        encoder.event("response.output_item.done", output_index=index, item=item),
    ]


async def create_response(
    request: Request,
    document: Any,
    handlers: GenerationHandlers,
    codes: ResultCodes,
    tool_call_parser: str = AUTO,
    with_reasoning: ReasoningStep | None = None,
) -> Response:
    """``POST /v1/responses`` once the body is read: a response document, or its event stream
    (``tool_call_parser``: the server's ``--tool-call-parser``; ``with_reasoning``: its reasoning parser's
    plan for the request, and the request with its constraint applied after the reasoning)."""
    try:
        parsed = parse_responses_request(document)
        headers = {key.lower(): value for key, value in request.headers.items()}
        plan = parsed.tool_plan()
        text_request, reasoning = parsed.text_request(headers), None
        if with_reasoning is not None:
            text_request, reasoning = with_reasoning(text_request)
        generation = await handlers.start(text_request, codes)
    except MCPError as exc:
        return openai_error(exc)
    forced = plan is not None and plan.constraint is not None
    parser = resolve_parser(tool_call_parser, generation.tokenizer.template_source, forced)
    encoder = ResponseEncoder(parsed, plan, parser, reasoning)
    if parsed.stream:
        try:
            deltas = await response_deltas(request, generation)
        except MCPError as exc:
            return openai_error(exc)
        events = (_buffered_events if encoder.plan or encoder.reasoning else _events)(generation, deltas, encoder)
        headers = {**SSE_HEADERS, **generation.answer_headers}
        return StreamingResponse(events, media_type="text/event-stream", headers=headers)
    try:
        (choice,) = await collect_unless_gone(request, generation, 1)
    except MCPError as exc:
        return openai_error(exc)
    usage = encoder.count_reasoning(generation.usage, choice.token_ids, generation.tokenizer.decode)
    body = encoder.response(final_status(choice.finish_reason), choice.text, usage)
    return Response(orjson.dumps(body), media_type="application/json", headers=generation.answer_headers)
