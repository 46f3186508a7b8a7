"""Bounded SLA-class queues served by weighted fair queueing, with deadlines and backpressure.

Fairness is self-clocked fair queueing (SCFQ, a virtual-finish-time WFQ): a request gets the tag
``max(V, last tag of its class) + rows / weight`` when it is queued, where V is the tag of the
request dispatched last, and requests leave in tag order. Under saturation each class gets
dispatched rows in proportion to its weight (5/3/1 by default) and no class is ever starved: a
best-effort request waits at most for the few requests tagged before it, not for the other
classes to empty. A full class queue refuses new requests (:class:`OverloadedError`); nothing
grows without bound.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import deque
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import OverloadedError
from mcp2026ai.runtime.base import RequestDetails
from mcp2026ai.scheduling.config import ClassPolicy
from mcp2026ai.scheduling.demand import RecentArrivals

_RANK = {cls: rank for rank, cls in enumerate(SLAClass)}
_SEQUENCE = count()


@dataclass(eq=False)
class Pending:
    """One accepted request waiting for its batch; ``future`` receives its outputs or its error."""

    inputs: Mapping[str, np.ndarray]
    outputs: Sequence[str] | None
    sla_class: SLAClass
    rows: int
    key: Hashable
    enqueued_at: float
    deadline: float | None
    future: asyncio.Future[dict[str, np.ndarray]]
    tag: float = 0.0
    seq: int = field(default_factory=lambda: next(_SEQUENCE))
    batch_id: int | None = None
    """Set when the request is dispatched: the batch it runs in, and how many requests that batch holds."""
    batch_size: int = 0
    expected_s: float | None = None
    """For a class with a deadline: the seconds to its answer expected when it was admitted."""
    queue_ns: int = 0
    """Set when dispatched: how long it waited; ``compute_ns`` when run: its batch's run (scheduling/timing.py)."""
    compute_ns: int = 0
    details: RequestDetails | None = None
    """Its id and parameters, for a backend that takes them (runtime.base.RequestListBackend)."""

    def expired(self, now: float) -> bool:
        return self.deadline is not None and now > self.deadline

    @property
    def order(self) -> tuple[float, int, int]:
        return (self.tag, _RANK[self.sla_class], self.seq)


def effective_deadline(enqueued_at: float, class_deadline_ms: float | None, deadline: float | None) -> float | None:
    """The class deadline counted from ``enqueued_at``, shortened (never extended) by the request's own."""
    if class_deadline_ms is None:
        return deadline
    class_limit = enqueued_at + class_deadline_ms / 1000.0
    return class_limit if deadline is None else min(deadline, class_limit)


class ClassQueues:
    """One bounded FIFO per SLA class, merged into a single weighted-fair dispatch order."""

    def __init__(self, policies: Mapping[SLAClass, ClassPolicy], retry_after_s: float = 1.0) -> None:
        self._policies = dict(policies)
        self._queues: dict[SLAClass, deque[Pending]] = {cls: deque() for cls in self._policies}
        self._last_tag: dict[SLAClass, float] = dict.fromkeys(self._policies, 0.0)
        self._virtual_time = 0.0
        self._retry_after_s = retry_after_s
        self._rows: dict[SLAClass, int] = dict.fromkeys(self._policies, 0)
        self._arrivals = RecentArrivals(self._policies)

    def push(self, pending: Pending) -> None:
        """Queue ``pending`` and give it its fair-queueing tag, or raise OverloadedError if its class is full."""
        cls = pending.sla_class
        policy = self._policies[cls]
        queue = self._queues[cls]
        if len(queue) >= policy.capacity:
            raise OverloadedError(
                f"{cls.value} queue is full ({policy.capacity} requests); retry later", self._retry_after_s
            )
        start = max(self._virtual_time, self._last_tag[cls])
        pending.tag = start + max(pending.rows, 1) / policy.weight
        self._last_tag[cls] = pending.tag
        queue.append(pending)
        self._rows[cls] += pending.rows
        self._arrivals.record(cls, pending.enqueued_at, pending.rows)

    def is_full(self, cls: SLAClass) -> bool:
        return len(self._queues[cls]) >= self._policies[cls].capacity

    def rows(self, cls: SLAClass | None = None) -> int:
        """Rows queued in one class, or in all."""
        return self._rows[cls] if cls is not None else sum(self._rows.values())

    def rows_ahead(
        self,
        cls: SLAClass,
        rows: int,
        excluding: SLAClass | None = None,
        now: float | None = None,
        drain_rows_per_s: float | None = None,
    ) -> float:
        """Rows that would be dispatched before a new request of ``cls`` with ``rows`` rows (its own
        included), by the fluid view of the fair queueing: while virtual time moves from now to the
        new request's tag, class D gets ``weight_D`` rows per unit, up to what it has queued (its own
        class: everything queued). That counts only what the other classes have queued *now*; while
        they keep arriving, a class drains only at its guaranteed share of the rate, so its own rows
        divided by that share are a floor (:meth:`guaranteed_share`, with arrivals seen up to ``now``
        against ``drain_rows_per_s``). ``excluding`` leaves one class out (the one that would be shed)."""
        policy = self._policies[cls]
        finish = max(self._virtual_time, self._last_tag[cls]) + max(rows, 1) / policy.weight
        span = finish - self._virtual_time
        ahead = 0.0
        for other, queued in self._rows.items():
            if other is excluding:
                continue
            ahead += queued if other is cls else min(queued, self._policies[other].weight * span)
        own = self._rows[cls] + rows
        return max(ahead + rows, own / self.guaranteed_share(cls, excluding, now, drain_rows_per_s))

    def guaranteed_share(
        self,
        cls: SLAClass,
        excluding: SLAClass | None = None,
        now: float | None = None,
        drain_rows_per_s: float | None = None,
    ) -> float:
        """The share of the rows dispatched that ``cls`` can count on while the others keep arriving.

        Fair queueing guarantees it its weight's share against the classes competing now: those
        with rows queued or, given ``now``, rows queued within :data:`.demand.WINDOW_S`
        (``excluding`` never counts). Given the rate rows drain at, it also gets whatever the
        others' recent arrivals leave of it (a trickle of latency-critical requests takes no more
        than it brings), and the larger of the two holds."""
        weight = self._policies[cls].weight
        competing, others_rows_per_s = weight, 0.0
        for other, policy in self._policies.items():
            if other is cls or other is excluding:
                continue
            arriving = self._arrivals.rows_per_s(other, now) if now is not None else 0.0
            if self._rows[other] or arriving:
                competing += policy.weight
                others_rows_per_s += arriving
        by_weight = weight / competing
        if not drain_rows_per_s:
            return by_weight
        return max(by_weight, min(1.0, 1.0 - others_rows_per_s / drain_rows_per_s))

    def evict_newest(self, cls: SLAClass) -> Pending | None:
        """Remove the most recently queued request of ``cls`` (shedding it), if any; a class shed to
        empty no longer competes for the drain rate until it queues again."""
        queue = self._queues[cls]
        if not queue:
            return None
        pending = queue.pop()
        self._rows[cls] -= pending.rows
        if not queue:
            self._arrivals.forget(cls)
        return pending

    def ordered(self) -> Iterator[Pending]:
        """Queued requests in dispatch order, without removing them."""
        busy = [queue for queue in self._queues.values() if queue]
        if len(busy) == 1:
            return iter(busy[0])  # one class queued (the usual case): its FIFO is the order
        return heapq.merge(*busy, key=lambda pending: pending.order)

    def head_run(self, max_rows: int) -> tuple[list[Pending], bool]:
        """The leading requests that can share one batch, and whether more are queued behind them.

        The run stops at the first request that does not fit in ``max_rows`` or whose inputs cannot
        be concatenated with the first one's: dispatch order is kept, never reordered for batching.
        """
        run: list[Pending] = []
        rows = 0
        for pending in self.ordered():
            if run and (pending.key != run[0].key or rows + pending.rows > max_rows):
                return run, True
            run.append(pending)
            rows += pending.rows
        return run, False

    def take(self, n: int) -> list[Pending]:
        """Remove and return the first ``n`` requests in dispatch order."""
        taken: list[Pending] = []
        for _ in range(n):
            heads = [queue for queue in self._queues.values() if queue]
            if not heads:
                break
            queue = min(heads, key=lambda q: q[0].order)
            pending = queue.popleft()
            self._rows[pending.sla_class] -= pending.rows
            taken.append(pending)
        if taken:
            self._virtual_time = max(self._virtual_time, taken[-1].tag)
        return taken

    def sweep(self, now: float) -> tuple[list[Pending], list[Pending]]:
        """Drop requests that expired by ``now`` or whose caller gave up; return (expired, abandoned)."""
        expired: list[Pending] = []
        abandoned: list[Pending] = []
        for cls, queue in self._queues.items():
            if not any(p.future.done() or p.expired(now) for p in queue):
                continue
            kept: deque[Pending] = deque()
            for pending in queue:
                if pending.future.done():
                    abandoned.append(pending)
                elif pending.expired(now):
                    expired.append(pending)
                else:
                    kept.append(pending)
            self._queues[cls] = kept
            self._rows[cls] = sum(pending.rows for pending in kept)
        return expired, abandoned

    def drain(self) -> list[Pending]:
        """Remove and return everything queued (shutdown)."""
        everything = list(self.ordered())
        for queue in self._queues.values():
            queue.clear()
        self._rows = dict.fromkeys(self._policies, 0)
        return everything

    def depth(self, cls: SLAClass) -> int:
        return len(self._queues[cls])

    @property
    def backlog(self) -> int:
        """Queued requests over all classes."""
        return sum(len(queue) for queue in self._queues.values())

    def __len__(self) -> int:
        return self.backlog
