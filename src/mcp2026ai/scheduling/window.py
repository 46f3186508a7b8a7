"""How long a partial batch waits for company, and which arrivals can cut that wait short.

While the batcher waits out a batch's window, most new requests cannot change its decision: they
join the same run and the batch still waits for its window. :class:`FillingBatch` tells the ones
that can, so that ``submit`` wakes the batcher only for those (a wake-up costs a loop iteration and
a pass over the queues: per request, under load, more than the rest of the scheduling).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass

from mcp2026ai.scheduling.queues import Pending


def dispatch_due(run: Sequence[Pending], delay_s: float) -> float:
    """When a batch of ``run`` stops waiting to fill: the oldest member's window, or sooner so that
    no member spends more than half of its deadline budget waiting for company."""
    due = min(pending.enqueued_at for pending in run) + delay_s
    for pending in run:
        due = min(due, patience_limit(pending))
    return due


def patience_limit(pending: Pending) -> float:
    """The latest a request should wait for company: half of its deadline budget (none: forever)."""
    if pending.deadline is None:
        return math.inf
    return pending.enqueued_at + (pending.deadline - pending.enqueued_at) / 2


@dataclass
class FillingBatch:
    """A partial batch waiting until ``due`` for more rows.

    ``run`` is the whole queue (a batch waits only when nothing behind it is held back), so a new
    request changes the decision only if it cannot join the run (another shape key), brings the rows
    to a size that is dispatched at once (a target: a preferred size or ``max_batch_size``), or must
    leave before ``due``. Counting every arrival's rows errs on the side of waking.
    """

    key: Hashable
    rows: int
    due: float
    next_target: int

    @classmethod
    def of(cls, run: Sequence[Pending], due: float, targets: Collection[int]) -> FillingBatch:
        rows = sum(pending.rows for pending in run)
        above = [target for target in targets if target > rows]
        return cls(key=run[0].key, rows=rows, due=due, next_target=min(above, default=rows + 1))

    def changed_by(self, pending: Pending) -> bool:
        """Whether ``pending`` (just queued) may change what the batcher decides before ``due``."""
        self.rows += pending.rows
        return pending.key != self.key or self.rows >= self.next_target or patience_limit(pending) < self.due
