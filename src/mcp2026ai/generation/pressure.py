"""How long a new request would wait for a KV slot, from the queue's depth and measured service times.

Each finished request reports how long it held its slots (admission to last token: its steps times
the measured step time); an exponentially weighted mean of these is the time a slot turns over. A
request that finds ``ahead`` sequences waiting and every slot busy waits about
``(ahead + 1) / slots`` turnovers. The engine refuses a request whose estimate already exceeds its
time-to-first-token budget (the contract's ``ttft_p99_ms``) with 429 and that estimate as Retry-After,
instead of queueing it to miss its deadline.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from mcp2026ai.generation.prefill import PrefillTask

SMOOTHING = 0.2
"""Weight of the newest service time in the running mean."""
S = TypeVar("S")
PROBE_TOKENS = 64
"""Prompt tokens of the run that seeds :class:`PrefillPace` when an engine starts."""


class QueueWait:
    """The running estimate of a slot's turnover; thread-safe (the engine thread reports, callers ask)."""

    def __init__(self) -> None:
        self._service_s: float | None = None
        self._lock = threading.Lock()

    def finished(self, held_s: float) -> None:
        """A request held its slots ``held_s`` seconds (admission to its last token)."""
        if held_s < 0 or not math.isfinite(held_s):
            return
        with self._lock:
            previous = self._service_s
            self._service_s = held_s if previous is None else previous + SMOOTHING * (held_s - previous)

    @property
    def service_s(self) -> float | None:
        return self._service_s

    def estimate(self, ahead: int, free_slots: int, slots: int) -> float:
        """Seconds until a new request is admitted: 0 while a slot is free and nobody waits; 0 before
        anything was measured (nothing to go on: admit)."""
        service = self._service_s
        if service is None or (ahead == 0 and free_slots > 0):
            return 0.0
        return (ahead + 1) / max(1, slots) * service


class PrefillPace:
    """How fast a backlog of prompts drains: prompt tokens per second of engine step (decode runs
    included), a running mean over the steps that left prompt tokens waiting (a step that ran out of
    prompts would understate it). With all slots free a burst still queues, for prefill: the engine adds
    ``seconds_for(prompt tokens ahead)`` to a new request's wait, so the time to first token, not only
    the wait for a slot, is kept within the budget. Thread-safe like :class:`QueueWait`."""

    def __init__(self) -> None:
        self._tokens_per_s: float | None = None
        self._lock = threading.Lock()

    def observe(self, tokens: int, seconds: float) -> None:
        """A step ran ``tokens`` prompt tokens in ``seconds`` with more waiting behind them."""
        if tokens <= 0 or seconds <= 0 or not math.isfinite(seconds):
            return
        rate = tokens / seconds
        with self._lock:
            previous = self._tokens_per_s
            self._tokens_per_s = rate if previous is None else previous + SMOOTHING * (rate - previous)

    def probe(self, prefill: Callable[[Sequence[int]], object], max_tokens: int) -> None:
        """Seed the pace with an idle prompt run (the second of two: the first pays for allocations), so
        that a burst at a fresh engine is held to its budget too. Idle, it is optimistic: the running
        mean of real steps takes over."""
        tokens = list(range(1, min(PROBE_TOKENS, max_tokens) + 1))
        prefill(tokens)
        started = time.perf_counter()
        prefill(tokens)
        self.observe(len(tokens), time.perf_counter() - started)

    @property
    def tokens_per_s(self) -> float | None:
        return self._tokens_per_s

    def seconds_for(self, tokens: int) -> float:
        """Seconds to prefill ``tokens`` prompt tokens at the measured pace; 0 before anything was measured."""
        rate = self._tokens_per_s
        return tokens / rate if rate else 0.0


def late_prompts(
    tasks: Sequence[PrefillTask[S]], pace: PrefillPace, deadline: Callable[[S], float | None], step_s: float = 0.0
) -> tuple[list[PrefillTask[S]], float]:
    """The prompts among ``tasks`` (in the order they run) that cannot reach their first token by their
    ``deadline`` at ``pace`` with a step (``step_s``, the last one's time) to spare: the first token comes
    at the end of the step that runs the last chunk, and the pace is a mean. Also the seconds the others
    still take (the refused ones' Retry-After). The prompt that runs first is never refused: nothing
    would run sooner, and refusing everything would also stop the pace from being measured again."""
    now, ahead, late = time.monotonic(), 0, []
    for task in tasks:
        first, ahead = not ahead, ahead + task.remaining
        due = deadline(task.sequence)
        if not first and task.first_token and due is not None and now + step_s + pace.seconds_for(ahead) > due:
            late.append(task)
            ahead -= task.remaining
    return late, pace.seconds_for(ahead)
