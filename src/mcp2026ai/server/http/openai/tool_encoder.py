"""Chat documents of a request with tools: the text of each choice parsed for tool calls in the model
family's format (dataplane/tool_parsers.py), answered as ``message.tool_calls`` or streamed as OpenAI's
tool-call deltas (see server/http/openai/tools.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp2026ai.dataplane.tool_calls import ContentText, ToolCall, ToolCallArguments, ToolCallEvent, ToolCallStart
from mcp2026ai.dataplane.tool_parsers import HERMES, CallParser, new_parser, parse_whole
from mcp2026ai.generation.types import Choice, Delta, FinishReason, Usage
from mcp2026ai.server.http.openai.codec import ChatEncoder
from mcp2026ai.server.http.openai.tools import ToolPlan


def tool_calls_json(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in calls
    ]


class ToolChatEncoder(ChatEncoder):
    """Chat documents whose text is parsed for tool calls (see the module docstring)."""

    def __init__(self, model: str, tokenizer: Any, plan: ToolPlan, parser: str = HERMES) -> None:
        super().__init__(model, tokenizer)
        self.plan = plan
        self.parser = parser
        """The family format the calls are written in (tool_parsers.resolve_parser)."""
        self._parsers: dict[int, CallParser] = {}

    def new_parser(self) -> CallParser:
        return new_parser(self.parser, self.plan.max_calls, self.plan.tools)

    def response(self, choices: list[Choice], usage: Usage, logprobs: bool) -> dict[str, Any]:
        document = super().response(choices, usage, logprobs)
        for choice, body in zip(choices, document["choices"], strict=True):
            content, calls = parse_whole(self.new_parser(), body["message"]["content"])
            body["message"]["content"] = content
            if calls:
                body["message"]["tool_calls"] = tool_calls_json(calls)
                body["finish_reason"] = _finish(choice.finish_reason, calls)
        return document

    def chunks(self, delta: Delta, logprobs: bool, include_usage: bool) -> list[dict[str, Any]]:
        parser = self._parsers.get(delta.index) or self._parsers.setdefault(delta.index, self.new_parser())
        reasoning, text = self.split_delta(delta)
        events = parser.feed(text)
        if delta.finish_reason is not None:
            events += parser.finish()
        messages = [message for event in events if (message := _message(event, parser)) is not None]
        if reasoning:
            messages.insert(0, {"reasoning_content": reasoning})
        if delta.logprobs and logprobs and not messages:
            messages.append({"content": ""})
        documents = [self._chunk(delta.index, message, None, include_usage) for message in messages]
        if documents and logprobs:
            documents[0]["choices"][0]["logprobs"] = self.chat_logprobs(delta.logprobs)
        if delta.finish_reason is not None:
            reason = _finish(delta.finish_reason, parser.calls)
            documents.append(self._chunk(delta.index, {}, reason, include_usage))
        return documents

    def _chunk(self, index: int, message: dict[str, Any], reason: str | None, include_usage: bool) -> dict[str, Any]:
        if index not in self._started:
            self._started.add(index)
            message = {"role": "assistant", "content": None, **message}
        choice = {"index": index, "delta": message, "logprobs": None, "finish_reason": reason}
        document = self._base([choice], self.object_name)
        if include_usage:
            document["usage"] = None
        return document


def _message(event: ToolCallEvent, parser: CallParser) -> dict[str, Any] | None:
    if isinstance(event, ContentText):
        if parser.calls and not event.text.strip():
            return None  # the newlines between calls
        return {"content": event.text}
    if isinstance(event, ToolCallStart):
        call = {"index": event.index, "id": event.id, "type": "function"}
        return {"tool_calls": [{**call, "function": {"name": event.name, "arguments": ""}}]}
    assert isinstance(event, ToolCallArguments)
    return {"tool_calls": [{"index": event.index, "function": {"arguments": event.fragment}}]}


def _finish(reason: FinishReason | None, calls: Sequence[ToolCall]) -> str | None:
    if reason is None:
        return None
    return "tool_calls" if calls and reason is FinishReason.STOP else str(reason)
