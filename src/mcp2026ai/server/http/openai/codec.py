"""OpenAI's completions and chat completions, as JSON documents <-> generation types.

Requests are validated with strict pydantic types (``"3"`` or ``true`` is no integer, NaN and
Infinity are no numbers; the structured fields are shape-checked in shapes.py); a field declared
neither here nor in parameters.py is a 400 naming it (parameters.py says what happens to every
OpenAI parameter). The sampling fields map to :class:`SamplingParams` (vLLM's extra fields
``top_k``, ``min_p``, ``repetition_penalty``, ``stop_token_ids``, ``ignore_eos``, ``min_tokens``
and ``priority`` are accepted too).
Responses and stream chunks follow OpenAI's shapes, so the official client parses them unchanged.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.dataplane.generation import Prompt, TextRequest
from mcp2026ai.dataplane.reasoning import ChoiceReasoning
from mcp2026ai.errors import InvalidArgumentError, InvalidFieldError
from mcp2026ai.generation.chat_template import template_kwargs
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import Choice, Constraint, Delta, TokenLogprob, Usage
from mcp2026ai.messages import validated
from mcp2026ai.server.http.openai.parameters import SurfaceFields, check_parameters, refusal
from mcp2026ai.server.http.openai.shapes import MAX_TOOLS, StreamOptions
from mcp2026ai.server.http.openai.tools import Tool, ToolChoice, ToolPlan, tool_plan
from mcp2026ai.server.http.structured import FIELDS, constraint_of
from mcp2026ai.serving.limits import MAX_LOGPROBS, GenerationLimits

STRICT = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)


class _Request(SurfaceFields):
    model_config = STRICT

    model: str
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int = 1
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    stop_token_ids: list[int] = Field(default_factory=list)
    ignore_eos: bool = False
    response_format: Any = None
    guided_json: Any = None
    guided_choice: Any = None
    guided_regex: Any = None
    guided_grammar: Any = None
    structured_outputs: Any = None

    def constraint(self) -> Constraint | None:
        """Structured outputs (server/http/structured.py): the one constraint the request asks for."""
        return constraint_of({name: getattr(self, name) for name in FIELDS})

    @property
    def include_usage(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    def check_combinations(self) -> None:
        """Fields that only make sense with another one (OpenAI refuses these too)."""
        if self.stream_options is not None and not self.stream:
            raise InvalidFieldError("stream_options: only allowed when stream is true", "stream_options")

    def sampling_fields(self, max_tokens: int | None, logprobs: int | None) -> dict[str, Any]:
        """The sampling fields the request set (None: unset, the model's defaults apply)."""
        self.check_combinations()
        if max_tokens is not None and max_tokens < 1:
            raise InvalidFieldError(f"max_tokens must be at least 1 (got {max_tokens})", "max_tokens")
        stops = [self.stop] if isinstance(self.stop, str) else self.stop
        return {
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "min_p": self.min_p,
            "repetition_penalty": self.repetition_penalty,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "seed": self.seed,
            "stop": None if stops is None else tuple(stops),
            "stop_token_ids": tuple(self.stop_token_ids),
            "ignore_eos": self.ignore_eos,
            "n": self.n,
            "logprobs": logprobs,
            "logit_bias": self.logit_bias,
            "min_tokens": self.min_tokens,
        }


COMPLETION_MAX_TOKENS = 16
"""OpenAI's default max_tokens for /v1/completions (when neither the request nor the model's config sets one)."""


class CompletionRequest(_Request):
    prompt: str | list[str] | list[int] | list[list[int]]
    logprobs: int | None = None
    echo: bool = False
    best_of: int | None = Field(None, ge=1)

    @property
    def ranked(self) -> bool:
        """``best_of`` above ``n``: best_of choices run, the n with the highest mean token logprob return."""
        best_of = self.best_of or self.n
        if best_of < self.n:
            raise refusal("best_of", f"best_of ({best_of}) must be at least n ({self.n})")
        if best_of > self.n and (self.stream or self.echo):
            raise refusal("best_of", "best_of above n cannot be streamed or echoed")
        return best_of > self.n

    @property
    def scores_only(self) -> bool:
        """``echo`` with ``max_tokens: 0``: the prompt and its logprobs, nothing generated (one token is
        generated and dropped: the engine always samples one)."""
        if self.max_tokens == 0 and not self.echo:
            raise refusal("max_tokens", "max_tokens 0 asks for the prompt's scores only: it needs echo: true")
        return self.max_tokens == 0

    def text_requests(self, headers: Mapping[str, str]) -> list[TextRequest]:
        """One text request per prompt (OpenAI takes a list of prompts: each gets its own n choices)."""
        fields = self.sampling_fields(1 if self.scores_only else self.max_tokens, self.logprobs)
        if self.ranked:
            fields |= {"n": self.best_of, "logprobs": self.logprobs or 0}
        if self.echo and self.logprobs is not None:
            fields["prompt_logprobs"] = self.logprobs
        return [
            TextRequest(
                self.model,
                prompt,
                fields,
                COMPLETION_MAX_TOKENS,
                headers.get("x-sla-class"),
                headers,
                self.constraint(),
                priority=self.effective_priority(),
            )
            for prompt in self.prompts()
        ]

    def prompts(self) -> list[Prompt]:
        prompt = self.prompt
        if isinstance(prompt, str):
            return [Prompt(text=prompt)]
        if not prompt:
            raise refusal("prompt", "give at least one prompt")
        if all(isinstance(item, int) for item in prompt):
            return [Prompt(token_ids=tuple(int(token) for token in prompt))]  # type: ignore[arg-type]
        if all(isinstance(item, str) for item in prompt):
            return [Prompt(text=str(item)) for item in prompt]
        if all(isinstance(item, list) for item in prompt):
            return [Prompt(token_ids=tuple(item)) for item in prompt]  # type: ignore[arg-type]
        raise refusal("prompt", "a string, a list of strings, a list of token ids, or a list of those lists")


class ChatMessage(BaseModel):
    model_config = STRICT

    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None
    """An earlier assistant turn's reasoning, as this server (and vLLM) answered it; templates that
    show past reasoning read it (generation/chat_template.py gives it every name they use)."""
    reasoning: str | None = None

    def turn(self) -> dict[str, Any]:
        """The message as the chat template takes it (tool calls, their ids and reasoning kept)."""
        if self.role == "tool" and not self.tool_call_id:
            raise InvalidArgumentError("a message with role 'tool' needs the tool_call_id it answers")
        turn: dict[str, Any] = {"role": "system" if self.role == "developer" else self.role, "content": self.text()}
        extra = {
            "tool_calls": self.tool_calls,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "reasoning_content": self.reasoning_content or self.reasoning,
        }
        return turn | {key: value for key, value in extra.items() if value is not None}

    def text(self) -> str:
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        parts = []
        for part in self.content:
            if part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise InvalidArgumentError(f"message content parts must be text parts (got type {part.get('type')!r})")
            parts.append(part["text"])
        return "".join(parts)


class ChatCompletionRequest(_Request):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_LOGPROBS)
    tools: list[Tool] | None = Field(None, max_length=MAX_TOOLS)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    """vLLM's extra variables for the chat template (e.g. ``{"enable_thinking": false}``)."""

    def tool_plan(self) -> ToolPlan | None:
        return tool_plan(self.tools, self.tool_choice, self.parallel_tool_calls)

    def text_request(self, headers: Mapping[str, str]) -> TextRequest:
        wanted = self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens
        if self.top_logprobs is not None and not self.logprobs:
            raise InvalidFieldError("top_logprobs needs logprobs: true", "top_logprobs")
        fields = self.sampling_fields(wanted, (self.top_logprobs or 0) if self.logprobs else None)
        plan, constraint = self.tool_plan(), self.constraint()
        if plan is not None and plan.constraint is not None:
            if constraint is not None:
                raise InvalidArgumentError(f"tool_choice forces a tool call: {constraint.param} cannot apply too")
            constraint = plan.constraint
        prompt = Prompt(
            messages=tuple(m.turn() for m in self.messages),
            tools=plan.tools or None if plan else None,
            template_kwargs=template_kwargs(self.chat_template_kwargs) or None,
        )
        return TextRequest(
            self.model,
            prompt,
            fields,
            None,
            headers.get("x-sla-class"),
            headers,
            constraint,
            priority=self.effective_priority(),
        )


def parse_request(model: type[_Request], document: Any, limits: GenerationLimits) -> Any:
    """The request as ``model``; the message count is checked before the messages are validated."""
    if not isinstance(document, dict):
        raise InvalidArgumentError("the request body must be a JSON object")
    messages = document.get("messages")
    if isinstance(messages, list):
        limits.check_prompt(0, len(messages))
    prompt = document.get("prompt")
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):  # a list of prompts, not one's ids
        limits.check_prompt_count(len(prompt))
    check_parameters(document, model.model_fields)
    return validated(model, document)


# --- responses --------------------------------------------------------------------------------


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def usage_json(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def _finish(reason: object) -> str | None:
    return None if reason is None else str(reason)


class CompletionEncoder:
    """Builds /v1/completions documents for one request."""

    object_name = "text_completion"

    def __init__(self, model: str, tokenizer: TextTokenizer) -> None:
        self.id = new_id("cmpl")
        self.created = int(time.time())
        self.model = model
        self.tokenizer = tokenizer

    def _base(self, choices: list[dict[str, Any]], object_name: str) -> dict[str, Any]:
        return {"id": self.id, "object": object_name, "created": self.created, "model": self.model, "choices": choices}

    def logprobs(self, entries: list[TokenLogprob], offset: int = 0) -> dict[str, Any] | None:
        if not entries:
            return None
        tokens = [self.tokenizer.token_text(entry.token_id) for entry in entries]
        offsets, position = [], offset
        for token in tokens:
            offsets.append(position)
            position += len(token)
        return {
            "tokens": tokens,
            "token_logprobs": [entry.logprob for entry in entries],
            "top_logprobs": [{self.tokenizer.token_text(t): lp for t, lp in entry.top} for entry in entries],
            "text_offset": offsets,
        }

    def response(self, choices: list[Choice], usage: Usage, logprobs: bool) -> dict[str, Any]:
        body = [
            {
                "index": choice.index,
                "text": choice.text,
                "logprobs": self.logprobs(choice.logprobs) if logprobs else None,
                "finish_reason": _finish(choice.finish_reason),
            }
            for choice in choices
        ]
        return {**self._base(body, self.object_name), "usage": usage_json(usage)}

    def chunk(self, delta: Delta, logprobs: bool, include_usage: bool) -> dict[str, Any]:
        choice = {
            "index": delta.index,
            "text": delta.text,
            "logprobs": self.logprobs(delta.logprobs) if logprobs else None,
            "finish_reason": _finish(delta.finish_reason),
        }
        document = self._base([choice], self.object_name)
        if include_usage:
            document["usage"] = None
        return document

    def chunks(self, delta: Delta, logprobs: bool, include_usage: bool) -> list[dict[str, Any]]:
        """The stream chunks for one delta (one here; a tool-call stream may need several)."""
        return [self.chunk(delta, logprobs, include_usage)]

    def usage_chunk(self, usage: Usage) -> dict[str, Any]:
        return {**self._base([], self.object_name), "usage": usage_json(usage)}


class ChatEncoder(CompletionEncoder):
    """Builds /v1/chat/completions documents for one request."""

    object_name = "chat.completion.chunk"

    def __init__(self, model: str, tokenizer: TextTokenizer) -> None:
        super().__init__(model, tokenizer)
        self.id = new_id("chatcmpl")
        self._started: set[int] = set()
        self.reasoning: ChoiceReasoning | None = None
        """Set with ``--reasoning-parser``: ``<think>...</think>`` goes to ``reasoning_content``."""

    def split(self, text: str) -> tuple[str | None, str]:
        """A whole choice's (reasoning, content)."""
        return self.reasoning.whole(text) if self.reasoning is not None else (None, text)

    def split_delta(self, delta: Delta) -> tuple[str, str]:
        """A delta's (reasoning, content) text."""
        if self.reasoning is None:
            return "", delta.text
        return self.reasoning.delta(delta.index, delta.text, delta.finish_reason is not None, delta.token_ids)

    def usage_chunk(self, usage: Usage) -> dict[str, Any]:
        if self.reasoning is not None:
            usage.reasoning_tokens = self.reasoning.token_count(self.tokenizer.decode)
        return super().usage_chunk(usage)

    def _message(self, reasoning: str | None, content: str | None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        return message | {"reasoning_content": reasoning} if self.reasoning is not None else message

    def _entry(self, token_id: int, logprob: float) -> dict[str, Any]:
        text = self.tokenizer.token_text(token_id)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}

    def chat_logprobs(self, entries: list[TokenLogprob]) -> dict[str, Any] | None:
        if not entries:
            return None
        content = [
            {**self._entry(entry.token_id, entry.logprob), "top_logprobs": [self._entry(t, lp) for t, lp in entry.top]}
            for entry in entries
        ]
        return {"content": content}

    def response(self, choices: list[Choice], usage: Usage, logprobs: bool) -> dict[str, Any]:
        body = [
            {
                "index": choice.index,
                "message": self._message(*self.split(choice.text)),
                "logprobs": self.chat_logprobs(choice.logprobs) if logprobs else None,
                "finish_reason": _finish(choice.finish_reason),
            }
            for choice in choices
        ]
        if self.reasoning is not None:
            usage.reasoning_tokens = self.reasoning.token_count(
                self.tokenizer.decode, {choice.index: choice.token_ids for choice in choices}
            )
        return {**self._base(body, "chat.completion"), "usage": usage_json(usage)}

    def chunk(self, delta: Delta, logprobs: bool, include_usage: bool) -> dict[str, Any]:
        reasoning, text = self.split_delta(delta)
        message: dict[str, Any] = {"content": text} if text or delta.finish_reason is None else {}
        if reasoning:
            message = {"reasoning_content": reasoning} | ({"content": text} if text else {})
        if delta.index not in self._started:
            self._started.add(delta.index)
            message = {"role": "assistant", "content": text} | ({"reasoning_content": reasoning} if reasoning else {})
        choice = {
            "index": delta.index,
            "delta": message,
            "logprobs": self.chat_logprobs(delta.logprobs) if logprobs else None,
            "finish_reason": _finish(delta.finish_reason),
        }
        document = self._base([choice], self.object_name)
        if include_usage:
            document["usage"] = None
        return document
