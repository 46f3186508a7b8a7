"""Chunked prefill under one token budget per engine step (vLLM's unified scheduling, adapted).

Every step spends at most ``max_num_batched_tokens`` tokens: one per decoding sequence, and the rest
on prompt chunks. A prompt (or a preempted sequence's history, recomputed) is a :class:`PrefillTask`
that runs into its KV slot in pieces of at most ``prefill_chunk_tokens``, oldest task first, so
several waiting prompts progress in one step and a long prompt rides along with the running
decodes: no running stream waits longer than one step's chunks, and no prompt waits behind another
whole prompt once it is admitted.

The decoder (onnxruntime-genai's GroupQueryAttention) takes one ``[batch, seq]`` run with the same
``seq`` for every row, so a prompt chunk cannot share a run with one-token decode rows: a step is
the decode run of the running sequences plus the planned chunks, each its own run, together within
the budget. A chunk appends to the slot's KV (the decoder's ``prefill(slot, tokens, cached)``), the
arithmetic of one whole-prompt run cut at chunk boundaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

S = TypeVar("S")
CHUNK_ALIGN = 16
"""Chunks end on multiples of this (the KV block size). The int4 decoder's matrix kernels sum in
tiles of rows: cut at odd places, a few prompts out of 20 gave other greedy tokens than one whole
run did; cut at multiples of 16, all 20 were the same (tests/unit/generation/test_chunked_prefill.py)."""


@dataclass(eq=False)
class PrefillTask(Generic[S]):
    """Tokens to run into one sequence's KV slot, chunk by chunk."""

    sequence: S
    """The sequence whose slot the chunks run into."""
    tokens: list[int]
    """What the slot's KV holds once done (a prompt, or a preempted sequence's prompt and tokens so far)."""
    done: int = 0
    """Leading tokens already in the KV (restored from the prefix cache, or earlier chunks)."""
    forks: list[S] = field(default_factory=list)
    """Further choices of the same prompt: they copy the KV once it is complete (``n > 1``)."""
    first_token: bool = True
    """Sample the first token from the last chunk's logits (a new prompt); False for a recomputed
    sequence, whose next input token is already known."""

    @property
    def remaining(self) -> int:
        return len(self.tokens) - self.done


def plan_chunks(
    tasks: Sequence[PrefillTask[S]], budget: int, chunk: int, align: int = CHUNK_ALIGN
) -> list[tuple[PrefillTask[S], int]]:
    """The chunks of one step: tasks in order, each at most ``chunk`` tokens, together at most ``budget``;
    a chunk that does not finish its task ends on a multiple of ``align`` tokens."""
    planned: list[tuple[PrefillTask[S], int]] = []
    for task in tasks:
        size = min(task.remaining, chunk, budget)
        if size < task.remaining:
            size -= (task.done + size) % align
        if size <= 0:
            break
        planned.append((task, size))
        budget -= size
    return planned


def prefill_budget(step_tokens: int, decoding: int) -> int:
    """Prompt tokens one step may run beside ``decoding`` one-token decode rows (the config keeps
    ``step_tokens`` at least ``CHUNK_ALIGN`` above ``max_num_seqs``, so a prompt always progresses)."""
    return max(step_tokens - decoding, CHUNK_ALIGN)
