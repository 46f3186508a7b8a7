"""Weighted fair queueing, deadlines and backpressure of the class queues (counts, not timing)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import OverloadedError
from mcp2026ai.scheduling.config import ClassPolicy, default_classes
from mcp2026ai.scheduling.demand import RecentArrivals
from mcp2026ai.scheduling.queues import ClassQueues, Pending, effective_deadline

LC, TG, BE = SLAClass.LATENCY_CRITICAL, SLAClass.THROUGHPUT_GUARANTEED, SLAClass.BEST_EFFORT
MakePending = Callable[..., Pending]


@pytest.fixture()
def make_pending() -> Iterator[MakePending]:
    loop = asyncio.new_event_loop()

    def make(
        cls: SLAClass, rows: int = 1, key: object = "k", at: float = 0.0, deadline: float | None = None
    ) -> Pending:
        inputs = {"x": np.zeros((rows, 2), dtype=np.float32)}
        return Pending(inputs, None, cls, rows, key, at, deadline, loop.create_future())

    yield make
    loop.close()


def _policies(capacity: int) -> dict[SLAClass, ClassPolicy]:
    return {cls: policy.model_copy(update={"capacity": capacity}) for cls, policy in default_classes().items()}


def _fill(queues: ClassQueues, make: MakePending, cls: SLAClass, capacity: int) -> None:
    while queues.depth(cls) < capacity:
        queues.push(make(cls))


def test_saturated_queues_share_dispatches_5_3_1(make_pending: MakePending) -> None:
    capacity = 50
    queues = ClassQueues(_policies(capacity))
    picks: Counter[SLAClass] = Counter()
    for _ in range(900):
        for cls in SLAClass:
            _fill(queues, make_pending, cls, capacity)
        (pending,) = queues.take(1)
        picks[pending.sla_class] += 1
    assert picks[LC] / picks[BE] == pytest.approx(5, rel=0.05)
    assert picks[TG] / picks[BE] == pytest.approx(3, rel=0.05)
    assert picks[LC] + picks[TG] + picks[BE] == 900


def test_best_effort_is_served_early_under_saturation(make_pending: MakePending) -> None:
    queues = ClassQueues(_policies(100))
    for cls in SLAClass:
        _fill(queues, make_pending, cls, 100)
    first = [pending.sla_class for pending in queues.take(9)]
    assert Counter(first) == {LC: 5, TG: 3, BE: 1}


def test_a_late_best_effort_request_does_not_wait_for_the_backlog(make_pending: MakePending) -> None:
    queues = ClassQueues(_policies(1000))
    for _ in range(500):
        queues.push(make_pending(LC))
    queues.take(10)
    queues.push(make_pending(BE))
    position = next(i for i, pending in enumerate(queues.ordered()) if pending.sla_class is BE)
    assert position <= 5, "best-effort waits for about one weight's worth of latency-critical requests"


def test_rows_are_the_cost_not_requests(make_pending: MakePending) -> None:
    policies = {cls: ClassPolicy(weight=1.0, capacity=100) for cls in SLAClass}
    queues = ClassQueues(policies)
    for _ in range(40):
        queues.push(make_pending(LC, rows=4))
        queues.push(make_pending(BE, rows=1))
    rows: Counter[SLAClass] = Counter()
    for pending in queues.take(50):
        rows[pending.sla_class] += pending.rows
    assert rows[LC] == pytest.approx(rows[BE], abs=4), "equal weights share rows equally"


def test_full_class_queue_refuses_with_retry_after(make_pending: MakePending) -> None:
    queues = ClassQueues(_policies(2), retry_after_s=0.5)
    queues.push(make_pending(BE))
    queues.push(make_pending(BE))
    with pytest.raises(OverloadedError, match=r"best-effort queue is full \(2 requests\)") as caught:
        queues.push(make_pending(BE))
    assert caught.value.retry_after_s == 0.5
    queues.push(make_pending(LC))
    assert queues.backlog == 3


def test_sweep_removes_expired_and_abandoned(make_pending: MakePending) -> None:
    queues = ClassQueues(_policies(10))
    soon = make_pending(LC, at=0.0, deadline=0.05)
    late = make_pending(TG, at=0.0, deadline=2.0)
    never = make_pending(BE, at=0.0)
    gone = make_pending(BE, at=0.0)
    for pending in (soon, late, never, gone):
        queues.push(pending)
    gone.future.cancel()
    assert queues.sweep(0.05) == ([], [gone]), "a deadline is inclusive"
    expired, abandoned = queues.sweep(0.051)
    assert expired == [soon]
    assert abandoned == []
    assert list(queues.ordered()) == [late, never]


def test_head_run_keeps_order_and_stops_at_an_incompatible_request(make_pending: MakePending) -> None:
    queues = ClassQueues(_policies(10))
    a, b, c, d = (make_pending(LC, key=key) for key in ("k", "k", "other", "k"))
    for pending in (a, b, c, d):
        queues.push(pending)
    assert queues.head_run(max_rows=8) == ([a, b], True)
    assert queues.head_run(max_rows=1) == ([a], True)
    queues.take(2)
    assert queues.head_run(max_rows=8) == ([c], True)
    queues.take(1)
    assert queues.head_run(max_rows=8) == ([d], False)


def test_drain_returns_everything(make_pending: MakePending) -> None:
    queues = ClassQueues(_policies(10))
    for cls in SLAClass:
        queues.push(make_pending(cls))
    assert len(queues.drain()) == 3
    assert queues.backlog == 0


def test_request_deadline_only_shortens_the_class_deadline() -> None:
    assert effective_deadline(10.0, 50.0, None) == pytest.approx(10.05)
    assert effective_deadline(10.0, 50.0, 10.01) == pytest.approx(10.01)
    assert effective_deadline(10.0, 50.0, 99.0) == pytest.approx(10.05)
    assert effective_deadline(10.0, None, 12.0) == 12.0
    assert effective_deadline(10.0, None, None) is None


def test_a_class_still_receiving_other_classes_drains_only_at_its_guaranteed_share(make_pending: MakePending) -> None:
    """40 throughput-guaranteed rows queued; latency-critical has nothing queued at this instant but
    queued a request 0.2 s ago: by what is queued now the 41st row has 41 rows ahead, but while
    latency-critical keeps arriving the class gets only 3 / (3 + 5) of the rows dispatched."""
    queues = ClassQueues(_policies(capacity=64))
    for index in range(40):
        queues.push(make_pending(TG, at=index * 0.01))
    assert queues.rows_ahead(TG, 1) == pytest.approx(41)  # nobody else competing: its own rows only
    queues.push(make_pending(LC, at=0.8))
    queues.take(1)  # dispatched: latency-critical's queue is empty again, its arrival recent
    assert queues.rows(LC) == 0
    assert queues.guaranteed_share(TG, now=1.0) == pytest.approx(3 / 8)
    assert queues.rows_ahead(TG, 1, now=1.0) == pytest.approx(41 / (3 / 8))
    assert queues.rows_ahead(TG, 1, now=2.5) == pytest.approx(41)  # no arrival for 1.7 s: no longer competing
    assert queues.guaranteed_share(LC, now=1.0) == pytest.approx(5 / 8)  # against the queued class


def test_a_trickle_of_another_class_takes_only_what_it_brings(make_pending: MakePending) -> None:
    """Given the drain rate, a class gets at least what the others' recent arrivals leave of it: one
    latency-critical row in the last second of 100 rows/s leaves 99 %; 90 rows/s of them leave the
    weight's guarantee (3 / 8) as the larger bound."""
    queues = ClassQueues(_policies(capacity=256))
    queues.push(make_pending(TG, at=0.0))
    queues.push(make_pending(LC, at=0.5))
    queues.take(2)
    assert queues.guaranteed_share(TG, now=1.0) == pytest.approx(3 / 8)  # rate unknown: the weight's share
    assert queues.guaranteed_share(TG, now=1.0, drain_rows_per_s=100.0) == pytest.approx(0.99)
    for index in range(90):
        queues.push(make_pending(LC, at=1.0 + index / 100))
    queues.take(90)
    assert queues.guaranteed_share(TG, now=1.9, drain_rows_per_s=100.0) == pytest.approx(3 / 8)
    assert queues.rows_ahead(TG, 1, now=1.9, drain_rows_per_s=100.0) == pytest.approx(1 / (3 / 8))


def test_recent_arrivals_keep_only_the_window_even_for_a_class_nobody_asks_about() -> None:
    arrivals = RecentArrivals([BE, LC])
    for index in range(5000):
        arrivals.record(BE, index * 0.01, 1)  # 50 s of best-effort at 100 rows/s, never asked about
    assert len(arrivals._arrivals[BE]) <= 101
    assert arrivals.rows_per_s(BE, 49.99) == pytest.approx(100, abs=1)
    assert arrivals.rows_per_s(LC, 49.99) == 0.0
