"""What the engine keeps per request and per choice while it waits or runs (the engine thread's state)."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from mcp2026ai.generation.grammar import GrammarMatcher
from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.speculative import DraftState
from mcp2026ai.generation.stopping import TokenStop
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.text_stage import TextStage, TokenStep
from mcp2026ai.generation.types import FinishReason, GenerationRequest
from mcp2026ai.ir.lora_graph import NO_ADAPTER


@dataclass(eq=False)
class SequenceState:
    """One choice of a request, while it holds a KV slot."""

    job: Job
    index: int
    sampler: Sampler
    token_stop: TokenStop
    generated: int = 0
    history: list[int] = field(default_factory=list)
    """Every token sampled so far (the KV holds all but the last)."""
    replay: deque[int] = field(default_factory=deque)
    """Sampled tokens whose KV a resumed sequence recomputes: fed again by decode steps, as they were the
    first time (a prefill of them would take other kernels and need not give the same KV)."""
    last_token: int = 0
    last_token_at: float = 0.0
    finished: FinishReason | None = None
    drafting: DraftState = field(default_factory=DraftState)
    """Its speculation so far (back-off, drafts kept)."""
    grammar: GrammarMatcher | None = None
    """The constrained sequence's grammar state (None: free text)."""
    prefilling: bool = False
    """Its slot is being filled (a prompt, or a recomputed history): it skips decode steps until done."""


@dataclass(eq=False)
class Job:
    """A submitted request, waiting or running."""

    request: GenerationRequest
    stream: GenerationStream
    max_tokens: int
    abandoned: asyncio.Future[None]
    accepted_at: float
    span: Any
    text: TextStage
    sequences: list[SequenceState] = field(default_factory=list)
    steps: list[TokenStep] = field(default_factory=list)
    """Tokens sampled since the last hand-over to ``text`` (on the stream's event loop)."""
    aborted: bool = False
    first_token_at: float | None = None
    admitted_at: float = 0.0
    deadline: float | None = None
    """When its first token is due (the TTFT budget; None: no budget)."""
    adapter_slot: int = NO_ADAPTER
    """The decoder's slot of the LoRA adapter it runs with (``generation/adapters.py``)."""
    prefix_root: int = 0
    """Where its prompt's prefix-cache keys start: the adapter's (KV under one adapter is not another's)."""
