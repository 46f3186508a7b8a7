"""What one engine step runs, decided before anything runs (vLLM v1's ``SchedulerOutput``, adapted).

A step has three parts. The scheduler (``step_scheduler.py``) decides and returns a frozen
:class:`StepPlan`; the executor (``step_executor.py``) runs the plan against the decoder and returns
its raw outputs (:class:`~mcp2026ai.generation.step_executor.StepOutputs`: logits rows); output
processing (``output_processor.py``) samples from them and applies the results (grammar, stops, streams,
finishing). What a step runs is read off its plan, not off the engine's state, so the scheduler's
decisions are tested without a model (tests/unit/generation/test_step_scheduler.py).

The decoder takes one ``[batch, seq]`` shape per run, so a step is several runs, always in this
order: the KV housekeeping (:data:`KVOp`: slot compaction, vacated slots given back, prefix-cache
blocks copied in), in the order the scheduler made it; the decode run of slots ``0 .. n-1`` (one
token per decoding sequence); each draft verification; each scored prompt (``echo``: every
position's logits); each prompt chunk, oldest prompt first, followed by the KV copies to its other
choices when it completes the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcp2026ai.generation.class_precedence import Precedence
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.kv_slots import SlotMove
from mcp2026ai.ir.lora_graph import NO_ADAPTER


@dataclass(frozen=True)
class SlotRelease:
    """Give a vacated slot's memory back to the system (after any move out of it)."""

    slot: int


@dataclass(frozen=True)
class PrefixRestore:
    """Copy prefix-cache blocks into a slot's first positions."""

    slot: int
    blocks: tuple[np.ndarray, ...]


KVOp = SlotMove | SlotRelease | PrefixRestore
"""KV housekeeping, run in order before the step's model runs (and after it, for the finished)."""


@dataclass(frozen=True)
class DecodeBatch:
    """The decode run of slots ``0 .. n-1``: row ``i`` is slot ``i``."""

    sequences: tuple[SequenceState | None, ...]
    """The sequence whose next token each row gives; None: a throwaway row (a slot still being
    prefilled, or one verifying its drafts on its own), written past its KV and never read."""
    tokens: tuple[int, ...]
    """Each row's input: its sequence's last token (0 in a throwaway row)."""
    lengths: tuple[int, ...]
    """Tokens of each slot's KV its row attends to, its own included."""
    replayed: frozenset[int] = frozenset()
    """Rows that feed a resumed sequence's sampled token again (its KV recomputed as it first ran): their
    next token is known, so their logits are not sampled."""
    adapters: tuple[int, ...] = ()
    """Each row's LoRA adapter slot (``NO_ADAPTER``: the base model); empty: no row uses one. Rows of
    different adapters share the run: the decoder applies each row's own (``ir/lora_graph.py``)."""


@dataclass(frozen=True)
class DraftCheck:
    """A sequence's last token and its prompt-lookup draft, verified in one run of its own slot."""

    sequence: SequenceState
    slot: int
    fed: tuple[int, ...]
    """The last sampled token, then the drafted ones."""
    total: int
    """The slot's KV length once ``fed`` is written."""
    adapter: int = NO_ADAPTER

    @property
    def draft(self) -> tuple[int, ...]:
        return self.fed[1:]


@dataclass(frozen=True)
class ScoredPrompt:
    """A prompt whose tokens' logprobs are asked for: run whole, every position's logits kept."""

    job: Job
    slot: int
    tokens: Sequence[int]
    fork_slots: tuple[int, ...]
    """The slots of its other choices: they copy the prompt's KV after the run."""
    top: int
    """Top alternatives per prompt token (the request's ``prompt_logprobs``)."""
    adapter: int = NO_ADAPTER


@dataclass(frozen=True)
class PromptChunk:
    """Tokens ``start .. end-1`` of a prompt (or a preempted sequence's history) run into its slot."""

    sequence: SequenceState
    slot: int
    tokens: Sequence[int]
    """Everything the slot holds once the prompt is complete (the run reads ``tokens[:end]``)."""
    start: int
    end: int
    forks: tuple[SequenceState, ...] = ()
    """The prompt's other choices: they copy its KV once this chunk completes it."""
    fork_slots: tuple[int, ...] = ()
    completes: bool = False
    first_token: bool = True
    """A new prompt (its tokens count as prompt tokens; the completing chunk samples the first
    token of every choice); False for a recomputed history, whose next input is already known."""
    remember: bool = False
    """Keep the completed prompt's blocks in the prefix cache."""
    adapter: int = NO_ADAPTER
    """The LoRA adapter slot the prompt runs with (its KV differs from the base model's)."""

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def samples(self) -> bool:
        return self.completes and self.first_token


@dataclass(frozen=True)
class Admission:
    """A request that took its slots this step, and how much of its prompt the prefix cache held."""

    job: Job
    cached_tokens: int
    hit_rate: float | None
    """The prefix cache's hit rate after this lookup (None: no prefix cache)."""


@dataclass(frozen=True)
class StepPlan:
    """Everything one engine step runs and ends, within its token budget."""

    kv_ops: tuple[KVOp, ...] = ()
    decode: DecodeBatch | None = None
    """The decode run (None: none this step)."""
    verify: tuple[DraftCheck, ...] = ()
    scored: tuple[ScoredPrompt, ...] = ()
    chunks: tuple[PromptChunk, ...] = ()
    admitted: tuple[Admission, ...] = ()
    aborted: tuple[Job, ...] = ()
    """Requests that end now, their callers gone (waiting, admitted, running or preempted)."""
    refused: tuple[Job, ...] = ()
    """Prompts that cannot reach a first token within their TTFT budget: 429, their slots freed."""
    retry_after_s: float = 0.0
    preempted: tuple[Job, ...] = ()
    """Requests whose KV was freed for the others to grow: recomputed before any new admission."""
    decoding: int = 0
    """Sequences stepping this step (a decode row or a verification)."""
    precedence: Precedence | None = None
    """Best-effort work that gives way this step to latency-critical prompts (None: nothing does)."""

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens this step's chunks run (scored prompts aside)."""
        return sum(chunk.size for chunk in self.chunks)

    @property
    def runs(self) -> int:
        """Decoder runs the plan makes."""
        return (self.decode is not None) + len(self.verify) + len(self.scored) + len(self.chunks)
