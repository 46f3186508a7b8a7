"""/v1/completions beyond one plain prompt: a list of prompts, ``echo`` and ``best_of``.

A list of prompts runs as one generation per prompt, read as one answer: prompt ``i``'s choice ``j``
is choice ``i * n + j``, the way OpenAI numbers them; usage adds up. ``echo`` puts each prompt
before its choices' text; with ``logprobs`` the prompt's tokens lead the choice's logprobs (the
first token's logprob and top_logprobs are null, as it has no context) and ``text_offset`` counts
from the start of the prompt. ``echo`` with ``max_tokens: 0`` scores the prompt only (lm-eval's
loglikelihood requests of old). ``best_of`` above ``n`` runs best_of choices and keeps the n with the
highest mean token logprob (:func:`best_choices`); usage counts every choice run, as OpenAI bills it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from mcp2026ai.dataplane.generation import GenerationHandlers, ResultCodes, TextGeneration, TextRequest
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import Choice, Delta, SamplingParams, TokenLogprob, Usage
from mcp2026ai.server.http.openai.codec import CompletionEncoder


class PromptBatch:
    """The generations of several prompts as one stream of deltas, numbered as OpenAI does."""

    def __init__(self, generations: list[TextGeneration]) -> None:
        self.generations = generations
        self.params: SamplingParams = generations[0].params
        self.choices = self.params.n * len(generations)

    @property
    def tokenizer(self) -> TextTokenizer:
        return self.generations[0].tokenizer

    @property
    def ttft_budget_s(self) -> float | None:
        return self.generations[0].ttft_budget_s  # one model, one contract

    @property
    def answer_headers(self) -> dict[str, str]:
        return self.generations[0].answer_headers

    @property
    def usage(self) -> Usage:
        parts = [generation.usage for generation in self.generations]
        return Usage(
            sum(part.prompt_tokens for part in parts),
            sum(part.completion_tokens for part in parts),
            sum(part.cached_tokens for part in parts),
        )

    def owner(self, index: int) -> tuple[TextGeneration, int]:
        """The generation that produces choice ``index``, and that choice's index within it."""
        return self.generations[index // self.params.n], index % self.params.n

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self._merged()

    async def _merged(self) -> AsyncIterator[Delta]:
        queue: asyncio.Queue[tuple[int, Delta | BaseException | None]] = asyncio.Queue()
        pumps = [asyncio.ensure_future(_pump(part, each, queue)) for part, each in enumerate(self.generations)]
        running = len(pumps)
        try:
            while running:
                part, item = await queue.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield dataclasses.replace(item, index=part * self.params.n + item.index)
        finally:
            for pump in pumps:
                pump.cancel()

    async def collect(self, choices: int) -> list[Choice]:
        gathered = [Choice(index) for index in range(choices)]
        try:
            async for delta in self:
                gathered[delta.index].add(delta)
        except BaseException:
            self.abort()
            raise
        return gathered

    def abort(self) -> None:
        for generation in self.generations:
            generation.abort()


async def _pump(
    part: int, generation: TextGeneration, queue: asyncio.Queue[tuple[int, Delta | BaseException | None]]
) -> None:
    try:
        async for delta in generation:
            queue.put_nowait((part, delta))
    except Exception as exc:  # noqa: BLE001 - handed to the reader, which raises it
        queue.put_nowait((part, exc))
    queue.put_nowait((part, None))


async def start_completions(
    handlers: GenerationHandlers, requests: list[TextRequest], codes: ResultCodes
) -> TextGeneration | PromptBatch:
    """Admit every prompt's generation; if one is refused, those already admitted are aborted."""
    started: list[TextGeneration] = []
    try:
        for request in requests:
            started.append(await handlers.start(request, codes))
    except BaseException:
        for generation in started:
            generation.abort()
        raise
    return started[0] if len(started) == 1 else PromptBatch(started)


def best_choices(choices: list[Choice], best_of: int, n: int, keep_logprobs: bool) -> list[Choice]:
    """Of each prompt's ``best_of`` choices, the ``n`` with the highest mean token logprob (OpenAI's
    "highest log probability per token"), renumbered ``prompt * n + rank``."""
    chosen: list[Choice] = []
    for start in range(0, len(choices), best_of):
        group = sorted(choices[start : start + best_of], key=_mean_logprob, reverse=True)[:n]
        for rank, choice in enumerate(group):
            logprobs = choice.logprobs if keep_logprobs else []
            index = start // best_of * n + rank
            chosen.append(Choice(index, choice.text, choice.token_ids, logprobs, choice.finish_reason))
    return chosen


def _mean_logprob(choice: Choice) -> float:
    return sum(entry.logprob for entry in choice.logprobs) / len(choice.logprobs) if choice.logprobs else 0.0


class EchoEncoder(CompletionEncoder):
    """A /v1/completions encoder that puts each prompt (and its logprobs) before its choices."""

    def __init__(
        self, model: str, answer: TextGeneration | PromptBatch, prompts: Sequence[str | None], scores_only: bool
    ) -> None:
        super().__init__(model, answer.tokenizer)
        self.answer = answer
        self.prompts = prompts
        self.scores_only = scores_only
        """``max_tokens: 0``: the one token generated is dropped (text, logprobs, usage)."""
        self._offsets: dict[int, int] = {}
        """Per choice, the characters streamed so far (prompt included): the next text_offset."""

    def _part(self, index: int) -> tuple[TextGeneration, str]:
        if isinstance(self.answer, PromptBatch):
            generation, _ = self.answer.owner(index)
            part = index // self.answer.params.n
        else:
            generation, part = self.answer, 0
        text = self.prompts[part]
        return generation, text if text is not None else self.tokenizer.decode(generation.prompt_ids)

    def echoed_logprobs(self, index: int, entries: list[TokenLogprob]) -> dict[str, Any]:
        generation, _ = self._part(index)
        scored = generation.prompt_logprobs or []
        pairs: list[tuple[int, TokenLogprob | None]] = [
            (token, scored[position] if position < len(scored) else None)
            for position, token in enumerate(generation.prompt_ids)
        ]
        pairs += [(entry.token_id, entry) for entry in entries]
        tokens = [self.tokenizer.token_text(token) for token, _ in pairs]
        offsets, position = [], 0
        for token in tokens:
            offsets.append(position)
            position += len(token)
        return {
            "tokens": tokens,
            "token_logprobs": [entry.logprob if entry else None for _, entry in pairs],
            "top_logprobs": [
                {self.tokenizer.token_text(t): lp for t, lp in entry.top} if entry else None for _, entry in pairs
            ],
            "text_offset": offsets,
        }

    def response(self, choices: list[Choice], usage: Usage, logprobs: bool) -> dict[str, Any]:
        if self.scores_only:
            choices = [Choice(choice.index, finish_reason=choice.finish_reason) for choice in choices]
            usage = Usage(usage.prompt_tokens, 0, usage.cached_tokens)
        document = super().response(choices, usage, False)
        for body, choice in zip(document["choices"], choices, strict=True):
            body["text"] = self._part(choice.index)[1] + choice.text
            body["logprobs"] = self.echoed_logprobs(choice.index, choice.logprobs) if logprobs else None
        return document

    def usage_chunk(self, usage: Usage) -> dict[str, Any]:
        return super().usage_chunk(Usage(usage.prompt_tokens, 0, usage.cached_tokens) if self.scores_only else usage)

    def chunk(self, delta: Delta, logprobs: bool, include_usage: bool) -> dict[str, Any]:
        if self.scores_only:
            delta = Delta(delta.index, finish_reason=delta.finish_reason)
        document = super().chunk(delta, False, include_usage)
        choice = document["choices"][0]
        offset = self._offsets.get(delta.index)
        if offset is None:
            choice["text"] = self._part(delta.index)[1] + delta.text
            choice["logprobs"] = self.echoed_logprobs(delta.index, delta.logprobs) if logprobs else None
        elif logprobs:
            choice["logprobs"] = self.logprobs(delta.logprobs, offset)
        self._offsets[delta.index] = (offset or 0) + len(choice["text"])
        return document
