"""Iteration-level admission: which waiting requests join the running batch before the next step.

Waiting requests sit in the same SLA-class queues as tensor requests (weighted fair queueing,
bounded per class: a full class refuses with OverloadedError -> 429 + Retry-After). Between two
decode steps the scheduler admits requests in fair-queueing order while KV slots are free (a
request with ``n`` choices needs ``n``) and the step's prefill budget lasts; it never reorders
past a request that does not fit yet. Finished and aborted sequences leave the batch at once, so
a new request waits for at most one step once a slot is free (continuous batching).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

from mcp2026ai.contract import SLAClass
from mcp2026ai.scheduling.config import ClassPolicy
from mcp2026ai.scheduling.queues import ClassQueues, Pending

Job = TypeVar("Job", bound=Hashable)


class WaitingQueue(Generic[Job]):
    """Requests waiting for KV slots, by SLA class, in weighted-fair order."""

    def __init__(self, classes: Mapping[SLAClass, ClassPolicy], retry_after_s: float) -> None:
        self._queues = ClassQueues(classes, retry_after_s)

    def push(
        self,
        job: Job,
        sla_class: SLAClass,
        sequences: int,
        abandoned: asyncio.Future[None],
        deadline: float | None = None,
    ) -> None:
        """Queue ``job``; OverloadedError if its class queue is full. Cancel ``abandoned`` to drop it; past
        ``deadline`` (monotonic seconds) it is swept as expired."""
        pending = Pending(
            inputs={},
            outputs=None,
            sla_class=sla_class,
            rows=sequences,
            key=job,
            enqueued_at=time.monotonic(),
            deadline=deadline,
            future=abandoned,  # type: ignore[arg-type]  # only done() is read: cancelled means abandoned
        )
        self._queues.push(pending)

    def admit(
        self,
        free_slots: int,
        prefill_budget: int,
        cost: Callable[[Job], tuple[int, int]],
        fits: Callable[[Job], bool] | None = None,
    ) -> list[Job]:
        """Jobs to start now, in order: each costs (slots, prompt tokens); the first always fits the
        prefill budget; ``fits`` (asked last, once per admitted job) can refuse for other reasons (KV blocks)."""
        admitted: list[Job] = []
        while True:
            head = next(iter(self._queues.ordered()), None)
            if head is None:
                return admitted
            job: Job = head.key  # type: ignore[assignment]
            slots, tokens = cost(job)
            if slots > free_slots or (admitted and tokens > prefill_budget):
                return admitted
            if fits is not None and not fits(job):
                return admitted
            self._queues.take(1)
            admitted.append(job)
            free_slots -= slots
            prefill_budget -= tokens

    def sweep(self) -> tuple[list[Job], list[Job]]:
        """Remove the jobs whose deadline passed while they waited, and those whose caller gave up."""
        expired, abandoned = self._queues.sweep(time.monotonic())
        return [pending.key for pending in expired], [pending.key for pending in abandoned]  # type: ignore[misc]

    def drain(self) -> list[Job]:
        return [pending.key for pending in self._queues.drain()]  # type: ignore[misc]

    def jobs(self) -> list[Job]:
        """The waiting jobs, in admission order."""
        return [pending.key for pending in self._queues.ordered()]  # type: ignore[misc]

    def slots_wanted(self, sla_class: SLAClass) -> int:
        """The slots the waiting jobs of ``sla_class`` need (one per choice)."""
        if not self._queues.depth(sla_class):
            return 0
        return sum(pending.rows for pending in self._queues.ordered() if pending.sla_class == sla_class)

    def depth(self, sla_class: SLAClass | None = None) -> int:
        return self._queues.depth(sla_class) if sla_class is not None else self._queues.backlog
