"""Which work of one engine step gives way to a latency-critical prompt (the SLA classes inside a step).

The waiting queue admits requests in weighted-fair class order (``scheduler.py``), but once admitted
every prompt chunk and decode row shared the step alike: a latency-critical prompt admitted beside a
running OpenAI batch (best-effort lines, ``server/http/openai/batch/``) waited for the batch's prompt
chunks queued before it and ran in a step that also ran the batch's decode rows, so its time to first
token grew with the batch. The decision here, taken once per step by the step scheduler and carried in
its plan (:class:`Precedence`, and the plan's ``preempted``), is:

1. prompts are filled in class order, latency-critical first (oldest first within a class), so the
   token budget and the late-prompt estimate (``pressure.late_prompts``) see them in the order they run;
2. while a latency-critical prompt is being filled, best-effort prompt chunks wait (their tasks stay,
   with their progress, for a later step) and best-effort decoding sequences skip the step's decode
   run: their slots get a throwaway row, as a slot being prefilled does, and they take their next
   token once no latency-critical prompt is left. Nothing is recomputed, so the tokens they give are
   the ones they would have given (docs/determinism.md; with batch invariance on, a row's logits do
   not depend on the rows beside it);
3. when latency-critical requests wait for a slot and none is free, the most recently admitted
   best-effort requests are preempted (:meth:`StepScheduler.yield_slots`, before admission): their
   slots and KV blocks go to the latency-critical requests, and they are recomputed exactly (their
   prompt prefilled again, their tokens replayed by decode steps) once slots free up, before any other
   new request.

Throughput-guaranteed work neither gives way nor takes precedence over best-effort beyond the order
of prompts. A best-effort sequence waits while latency-critical prompts keep arriving back to back:
that is the best-effort class's promise (no latency contract), bounded by the latency-critical
traffic's own admission (its TTFT budget refuses what the engine cannot serve).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp2026ai.contract import SLAClass
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.prefill import PrefillTask

CLASS_RANK = {SLAClass.LATENCY_CRITICAL: 0, SLAClass.THROUGHPUT_GUARANTEED: 1, SLAClass.BEST_EFFORT: 2}
"""The order prompts are filled in: lower first."""


@dataclass(frozen=True)
class Precedence:
    """What gives way this step to the latency-critical prompts being filled."""

    urgent: tuple[SequenceState, ...]
    """The latency-critical prompts (their first choices) being filled: the reason for the rest."""
    paused: tuple[SequenceState, ...] = ()
    """Best-effort decoding sequences that skip this step's decode run (a throwaway row each)."""
    deferred: tuple[SequenceState, ...] = ()
    """Best-effort prompts (their first choices) whose chunks wait for a later step."""


def class_of(sequence: SequenceState) -> SLAClass:
    return sequence.job.request.sla_class


def gives_way(job: Job) -> bool:
    """Whether a running request is preempted for latency-critical requests waiting for a slot."""
    return job.request.sla_class == SLAClass.BEST_EFFORT


def fill_order(tasks: list[PrefillTask[SequenceState]]) -> None:
    """Sort the prompts being filled by class, latency-critical first (stable: oldest first within one)."""
    tasks.sort(key=lambda task: CLASS_RANK[class_of(task.sequence)])


def precedence(tasks: Sequence[PrefillTask[SequenceState]], decoding: Sequence[SequenceState]) -> Precedence | None:
    """What best-effort work waits this step; None when no latency-critical prompt is being filled."""
    urgent = tuple(task.sequence for task in tasks if class_of(task.sequence) == SLAClass.LATENCY_CRITICAL)
    if not urgent:
        return None
    paused = tuple(sequence for sequence in decoding if class_of(sequence) == SLAClass.BEST_EFFORT)
    deferred = tuple(task.sequence for task in tasks if class_of(task.sequence) == SLAClass.BEST_EFFORT)
    return Precedence(urgent, paused, deferred)
