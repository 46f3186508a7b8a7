"""The request of OpenAI's Responses API (``POST /v1/responses``), stateless, as a :class:`TextRequest`.

``input`` (a string, or a list of messages: ``{"role", "content"}`` with a string or ``input_text`` /
``output_text`` parts) follows ``instructions`` (a system message) through the model's chat
template; ``max_output_tokens``, ``temperature``, ``top_p``, ``service_tier`` and the identifiers of
parameters.py are honoured, and function ``tools`` with ``tool_choice`` and
``parallel_tool_calls`` (responses_tools.py). This server keeps no responses: ``store: true`` and
``previous_response_id`` are 400s naming them, as is every field it cannot honour (``text.format``
other than text: structured outputs are on chat completions), so nothing is silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcp2026ai.dataplane.generation import Prompt, TextRequest
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import validated
from mcp2026ai.server.http.openai.parameters import SERVICE_TIER_PRIORITY, refusal
from mcp2026ai.server.http.openai.responses_tools import chat_tool_choice, chat_tools, history_turns
from mcp2026ai.server.http.openai.tools import ToolPlan, tool_plan

REFUSED: dict[str, str] = {
    "previous_response_id": "this server stores no responses: send the whole conversation in input",
    "conversation": "this server stores no conversations: send the whole conversation in input",
    "max_tool_calls": "max_tool_calls is not supported (parallel_tool_calls: false allows one)",
    "background": "background responses need a store, and this server keeps none",
    "include": "no extra output data is available to include",
    "prompt": "stored prompt templates are not supported",
    "reasoning": "no served model has reasoning settings",
    "metadata": "metadata is kept with stored responses, and this server stores none",
    "top_logprobs": "logprobs are not offered on /v1/responses (use /v1/chat/completions)",
    "truncation": "only truncation: disabled is supported (an over-long input is a 400)",
    "context_management": "context management is not supported",
    "image": "image generation is not supported",
    "moderation": "moderation is not offered by this server",
    "access_programs": "access programs are not supported",
    "prompt_cache_options": "prompt cache options are not supported (the prefix cache is automatic)",
    "prompt_cache_retention": "prompt cache retention is not configurable per request",
    "background_options": "background responses need a store, and this server keeps none",
}
"""Fields of ``responses.create`` refused by name (with an allowed value where one is harmless)."""

HARMLESS: dict[str, tuple[Any, ...]] = {
    "background": (False,),
    "include": ([],),
    "truncation": ("disabled",),
    "reasoning": ({},),
}
"""Refused fields whose value here asks for nothing this server lacks: accepted as that."""

ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


class InputMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[dict[str, Any]]
    id: str | None = None
    status: str | None = None

    def turn(self) -> dict[str, str]:
        if isinstance(self.content, str):
            return {"role": ROLES[self.role], "content": self.content}
        texts = []
        for part in self.content:
            if part.get("type") not in ("input_text", "output_text") or not isinstance(part.get("text"), str):
                raise refusal("input", f"content parts must be input_text or output_text (got {part.get('type')!r})")
            texts.append(part["text"])
        return {"role": ROLES[self.role], "content": "".join(texts)}


class ResponsesRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str
    input: str | list[dict[str, Any]] = Field(min_length=1)
    instructions: str | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    store: bool | None = None
    service_tier: Literal["auto", "default", "priority", "flex"] | None = None
    text: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None

    @field_validator("store")
    @classmethod
    def _nothing_stored(cls, value: bool | None) -> bool | None:
        if value:
            raise ValueError("this server stores no responses: send store: false (or leave it out)")
        return value

    @field_validator("text")
    @classmethod
    def _plain_text(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        fmt = (value or {}).get("format") or {"type": "text"}
        if fmt.get("type") != "text" or set(value or {}) - {"format", "verbosity"} or (value or {}).get("verbosity"):
            raise ValueError("only text.format type text is supported here (structured outputs: chat completions)")
        return value

    def messages(self) -> tuple[dict[str, Any], ...]:
        turns: list[dict[str, Any]] = [{"role": "system", "content": self.instructions}] if self.instructions else []
        if isinstance(self.input, str):
            return (*turns, {"role": "user", "content": self.input})
        calls: list[dict[str, Any]] = []
        for item in self.input:
            kind = item.get("type", "message")
            if kind in ("function_call", "function_call_output"):
                calls.append(item)
                continue
            turns += history_turns(calls)
            calls = []
            if kind != "message":
                raise refusal("input", f"input items of type {kind!r} are not supported")
            turns.append(validated(InputMessage, item).turn())
        return (*turns, *history_turns(calls))

    def tool_plan(self) -> ToolPlan | None:
        if not self.tools and self.tool_choice in (None, "none", "auto"):
            return None  # nothing to call: no tools is what these ask for
        return tool_plan(chat_tools(self.tools), chat_tool_choice(self.tool_choice), self.parallel_tool_calls)

    def text_request(self, headers: Mapping[str, str]) -> TextRequest:
        sampling = {"max_tokens": self.max_output_tokens, "temperature": self.temperature, "top_p": self.top_p}
        priority = SERVICE_TIER_PRIORITY[self.service_tier or "auto"]
        plan = self.tool_plan()
        prompt = Prompt(messages=self.messages(), tools=(plan.tools or None) if plan else None)
        constraint = plan.constraint if plan else None
        sla_class = headers.get("x-sla-class")
        return TextRequest(self.model, prompt, sampling, None, sla_class, headers, constraint, priority=priority)


def parse_responses_request(document: Any) -> ResponsesRequest:
    if not isinstance(document, dict):
        raise InvalidArgumentError("the request body must be a JSON object")
    declared = set(ResponsesRequest.model_fields)
    for name, value in document.items():
        if name in declared or value is None or value in HARMLESS.get(name, ()):
            continue
        raise refusal(name, REFUSED.get(name, "not a parameter this server knows (see the OpenAI API)"))
    parsed = validated(ResponsesRequest, document)
    parsed.tool_plan()  # the tools and tool_choice checked now, before anything runs
    return parsed
