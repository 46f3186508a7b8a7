"""A request's text, made off the engine's step: detokenizing, stop strings, log-probabilities.

The engine thread only samples. Each step it hands every job's new tokens (:class:`TokenStep`) to
the job's stream, whose event loop runs :meth:`TextStage.assemble` while the engine thread already
runs the next step (onnxruntime releases the GIL during a run: benchmarks/engine/host_path.py
measures what stays on the step). There the tokens become text deltas: incremental detokenizing,
stop strings (which may span tokens: see ``stopping.py``), and log-probabilities from a copy of the
token's raw logits row.

A stop string is therefore found a step after the engine sampled the token that completes it. The
stage ends the choice at that token (the text before the stop string, ``finish_reason`` stop, usage
counting up to that token) and records it in :attr:`TextStage.stopped`; the engine drops the choice
before its next step, and whatever the choice sampled meanwhile is discarded here. The output is
token for token what a stop check inside the step gave.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcp2026ai.generation.sampling import token_logprob
from mcp2026ai.generation.stopping import StopStrings
from mcp2026ai.generation.tokenizer import IncrementalDecoder, TextTokenizer
from mcp2026ai.generation.types import Delta, FinishReason, SamplingParams


@dataclass(frozen=True)
class TokenStep:
    """What one choice produced in one engine step (or how it ended without a token)."""

    index: int
    token: int | None = None
    """The sampled token (None: no token, only an end such as an abort)."""
    in_text: bool = True
    """False for a stop token: it counts as generated but is neither returned nor detokenized."""
    logits: np.ndarray | None = None
    """A copy of the raw logits row the token was sampled from, when the request asked for logprobs."""
    finish: FinishReason | None = None
    """The end the engine saw at this token (stop token, grammar, length) or without one (abort)."""


class _ChoiceText:
    def __init__(self, tokenizer: TextTokenizer, stops: tuple[str, ...]) -> None:
        self.detokenizer = IncrementalDecoder(tokenizer)
        self.stop_strings = StopStrings(stops)
        self.generated = 0
        self.finish: FinishReason | None = None

    def flush(self) -> str:
        """Text held back when a choice ends without a stop string (an incomplete tail, a stop prefix)."""
        text, stopped = self.stop_strings.feed(self.detokenizer.flush())
        return text if stopped else text + self.stop_strings.flush()


Finished = Callable[[FinishReason, int], None]
"""Called once when every choice has ended: the first choice's finish reason, tokens generated."""


class TextStage:
    """The text side of one request's choices. :meth:`assemble` runs on one thread at a time (the
    stream's event loop); the engine thread only reads :attr:`stopped`."""

    def __init__(self, tokenizer: TextTokenizer, params: SamplingParams, on_finished: Finished) -> None:
        self._choices = [_ChoiceText(tokenizer, params.stop) for _ in range(params.n)]
        self._top_logprobs = params.logprobs or 0
        self._on_finished = on_finished
        self._ended = False
        self.stopped: set[int] = set()
        """Choices ended here by a stop string: the engine drops them before its next step."""

    def assemble(self, steps: list[TokenStep]) -> tuple[list[Delta], int, bool] | None:
        """Deltas of ``steps``, tokens generated so far, whether every choice has ended; None once it
        has (later steps are what the choices sampled before the engine saw their stop strings)."""
        if self._ended:
            return None
        deltas = [delta for delta in map(self._take, steps) if delta is not None]
        deltas = [delta for delta in deltas if delta.text or delta.token_ids or delta.finish_reason]
        generated = sum(choice.generated for choice in self._choices)
        done = all(choice.finish is not None for choice in self._choices)
        if done:
            self._ended = True
            self._on_finished(self._choices[0].finish or FinishReason.ABORT, generated)
        return deltas, generated, done

    def _take(self, step: TokenStep) -> Delta | None:
        choice = self._choices[step.index]
        if choice.finish is not None:
            return None  # sampled after its stop string, before the engine saw it
        delta = Delta(index=step.index)
        stopped = False
        if step.token is not None:
            choice.generated += 1
        if step.token is not None and step.in_text:
            delta.token_ids.append(step.token)
            if step.logits is not None:
                delta.logprobs.append(token_logprob(step.logits, step.token, self._top_logprobs))
            delta.text, stopped = choice.stop_strings.feed(choice.detokenizer.push(step.token))
        if stopped:
            choice.finish = FinishReason.STOP
            if step.finish is None:
                self.stopped.add(step.index)
        elif step.finish is not None:
            choice.finish = step.finish
            if step.token is not None:
                delta.text += choice.flush()
        delta.finish_reason = choice.finish
        return delta
