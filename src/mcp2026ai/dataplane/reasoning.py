"""Reasoning text (``<think>...</think>``) apart from the answer, as vLLM's ``--reasoning-parser`` does.

- ``deepseek_r1``: DeepSeek-R1 and its distills. The template opens the thinking block in the prompt
  (or the model does): everything up to ``</think>`` is reasoning, a leading ``<think>`` is dropped; an
  answer that never closes the block is reasoning only.
- ``qwen3``: Qwen3 and QwQ. The model opens the block itself with a leading ``<think>``; an answer
  without one is content only. A template whose generation prompt already opened the block (Qwen3
  thinking-2507) is read like ``deepseek_r1``; ``chat_template_kwargs: {"enable_thinking": false}``
  (the template writes an empty block into the prompt) leaves the answer all content.

:func:`reasoning_plan` decides where an answer starts (inside the block or not) from what the chat
template writes for the request; :class:`ReasoningSplitter` splits the answer's text as it streams.
The markers never reach ``content``. With structured outputs or a forced tool call, the grammar
applies after the reasoning ends (generation/grammar.py ``after_reasoning``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp2026ai.errors import InvalidArgumentError

OPEN = "<think>"
CLOSE = "</think>"
REASONING_PARSERS = ("deepseek_r1", "qwen3")
_PROBE = [{"role": "user", "content": "?"}]


@dataclass(frozen=True)
class ReasoningPlan:
    """How one request's answer is read: ``inside`` when it starts inside the thinking block."""

    inside: bool


def reasoning_plan(parser: str | None, tokenizer: Any, kwargs: Mapping[str, Any] | None) -> ReasoningPlan | None:
    """The plan for a request (None: no reasoning to split: no parser, or thinking switched off)."""
    if parser is None:
        return None
    if parser not in REASONING_PARSERS:
        raise InvalidArgumentError(f"unknown reasoning parser {parser!r} (one of {', '.join(REASONING_PARSERS)})")
    tail = _generation_prompt(tokenizer, kwargs)
    opened, closed = tail.rfind(OPEN), tail.rfind(CLOSE)
    if closed > opened:  # the template wrote a whole (empty) block: thinking is off
        return None
    if opened >= 0:
        return ReasoningPlan(inside=True)
    return ReasoningPlan(inside=parser == "deepseek_r1")


def _generation_prompt(tokenizer: Any, kwargs: Mapping[str, Any] | None) -> str:
    """The end of what the template writes for a one-turn chat (its generation prompt)."""
    if not getattr(tokenizer, "has_chat_template", False):
        return ""
    try:
        return str(tokenizer.apply_chat_template(_PROBE, kwargs=kwargs))[-64:]
    except InvalidArgumentError:  # a template that refuses the probe: the real messages will say why
        return ""


@dataclass
class ReasoningSplitter:
    """Splits one choice's text into (reasoning, content) as it streams (see the module docstring)."""

    inside: bool
    _buffer: str = ""
    _started: bool = False
    """Some text was read: a leading ``<think>`` no longer opens the block."""
    _trim: bool = False
    """The block just closed: newlines before the answer are dropped."""

    def feed(self, text: str) -> tuple[str, str]:
        self._buffer += text
        reasoning, content = "", ""
        while self._buffer:
            if not self._started:
                stripped = self._buffer.lstrip()
                if not stripped or (len(stripped) < len(OPEN) and OPEN.startswith(stripped)):
                    break  # whitespace or half a leading <think>: wait
                self._started = True
                if stripped.startswith(OPEN):
                    self._buffer, self.inside = stripped[len(OPEN) :], True
                continue
            marker = CLOSE if self.inside else OPEN
            at = self._buffer.find(marker)
            if at < 0:
                keep = _partial(self._buffer, marker) or _partial(self._buffer, CLOSE)
                ready, self._buffer = self._buffer[: len(self._buffer) - keep], self._buffer[len(self._buffer) - keep :]
                reasoning, content = self._add(ready, reasoning, content)
                break
            reasoning, content = self._add(self._buffer[:at], reasoning, content)
            self._buffer = self._buffer[at + len(marker) :]
            self._trim = self._trim or self.inside  # the newlines after </think> separate, they are no answer
            self.inside = False  # a stray <think> in the answer is dropped, not re-entered
        return reasoning, content

    def finish(self) -> tuple[str, str]:
        rest, self._buffer = self._buffer, ""
        if not self._started and rest.strip() == "":
            return "", rest
        if self.inside:
            return rest, ""
        return self._add(rest.replace(OPEN, ""), "", "")

    def _add(self, text: str, reasoning: str, content: str) -> tuple[str, str]:
        if self.inside:
            return reasoning + text, content
        if self._trim:
            text = text.lstrip("\n")
            self._trim = not text
        return reasoning, content + text.replace(CLOSE, "")


def split_reasoning(plan: ReasoningPlan, text: str) -> tuple[str | None, str]:
    """A whole answer's reasoning (None when there is none) and content."""
    splitter = ReasoningSplitter(plan.inside)
    reasoning, content = splitter.feed(text)
    more_reasoning, more_content = splitter.finish()
    reasoning += more_reasoning
    return reasoning or None, content + more_content


def _partial(text: str, tag: str) -> int:
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


def reasoning_token_count(plan: ReasoningPlan, token_ids: Sequence[int], decode: Callable[[Sequence[int]], str]) -> int:
    """How many of an answer's tokens are reasoning: those up to and including the one that completes
    ``</think>`` (all of them when the block never closes; none when the answer has no block). Found by
    decoding prefixes (a binary search: about log2(n) decodes), so a marker split over tokens counts once."""
    if not token_ids:
        return 0
    text = decode(token_ids)
    if not (plan.inside or text.lstrip().startswith(OPEN)):
        return 0
    if CLOSE not in text:
        return len(token_ids)
    low, high = 1, len(token_ids)
    while low < high:
        middle = (low + high) // 2
        if CLOSE in decode(token_ids[:middle]):
            high = middle
        else:
            low = middle + 1
    return low


class ChoiceReasoning:
    """The reasoning splitters of one request's choices (an encoder's helper)."""

    def __init__(self, plan: ReasoningPlan) -> None:
        self.plan = plan
        self._splitters: dict[int, ReasoningSplitter] = {}
        self._token_ids: dict[int, list[int]] = {}
        """Each streamed choice's token ids so far (for the usage's reasoning token count)."""

    def token_count(
        self, decode: Callable[[Sequence[int]], str], choices: Mapping[int, Sequence[int]] | None = None
    ) -> int:
        """The reasoning tokens of all choices: those given, or those streamed through :meth:`delta`."""
        answers = self._token_ids if choices is None else choices
        return sum(reasoning_token_count(self.plan, ids, decode) for ids in answers.values())

    def whole(self, text: str) -> tuple[str | None, str]:
        return split_reasoning(self.plan, text)

    def delta(self, index: int, text: str, final: bool, token_ids: Sequence[int] = ()) -> tuple[str, str]:
        """Choice ``index``'s next text as (reasoning, content); ``final``: its last delta."""
        splitter = self._splitters.setdefault(index, ReasoningSplitter(self.plan.inside))
        if token_ids:
            self._token_ids.setdefault(index, []).extend(token_ids)
        reasoning, content = splitter.feed(text)
        if final:
            more_reasoning, more_content = splitter.finish()
            reasoning, content = reasoning + more_reasoning, content + more_content
        return reasoning, content
