"""The load loops' arithmetic: seeded Poisson arrivals, exact request budgets, bounded concurrency, timeouts.

The sender here is a scripted transport (a coroutine that sleeps and answers a code): the loops only
see the Sender protocol. Real HTTP and gRPC senders run against the real server in
tests/integration/test_bench.py.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import numpy as np
import pytest

from mcp2026ai.bench.load import Bounds, Samples, closed_loop, open_loop, poisson_offsets


def test_poisson_offsets_are_seeded_increasing_and_at_the_rate() -> None:
    first = list(itertools.islice(poisson_offsets(200.0, seed=7), 20_000))
    again = list(itertools.islice(poisson_offsets(200.0, seed=7), 20_000))
    other = list(itertools.islice(poisson_offsets(200.0, seed=8), 100))
    assert first == again and first[:100] != other
    gaps = np.diff([0.0, *first])
    assert (gaps > 0).all()
    assert abs(gaps.mean() - 1 / 200) < 0.02 / 200  # 20k exponential gaps: mean within 2 %
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.03  # exponential: coefficient of variation 1


def test_poisson_offsets_continue_across_chunks() -> None:
    offsets = list(itertools.islice(poisson_offsets(1000.0, seed=1, chunk=16), 50))
    assert all(b > a for a, b in itertools.pairwise(offsets))


class Scripted:
    """Answers after ``delay_s`` with the next code of ``codes``; tracks how many calls overlap."""

    live = 0
    peak = 0

    def __init__(self, codes: list[str], delay_s: float = 0.0) -> None:
        self.codes = itertools.cycle(codes)
        self.delay_s = delay_s

    async def send(self) -> str:
        Scripted.live += 1
        Scripted.peak = max(Scripted.peak, Scripted.live)
        try:
            await asyncio.sleep(self.delay_s)
            return next(self.codes)
        finally:
            Scripted.live -= 1

    async def close(self) -> None:
        return None


def _run(coro_factory):  # type: ignore[no-untyped-def]
    Scripted.live = Scripted.peak = 0
    return asyncio.run(asyncio.wait_for(coro_factory(), timeout=20))


def test_closed_loop_sends_exactly_n_with_at_most_c_in_flight() -> None:
    async def factory() -> Scripted:
        return Scripted(["200", "200", "200", "503"], delay_s=0.001)

    samples = _run(lambda: closed_loop(factory, 5, Bounds(requests=101, duration_s=None, timeout_s=5), Samples()))
    assert samples.sent == 101 and samples.completed == 101
    assert Scripted.peak == 5
    assert samples.codes["503"] > 0 and samples.codes["200"] + samples.codes["503"] == 101
    assert len(samples.latencies_ns) == samples.codes["200"]
    assert samples.finished_ns > samples.started_ns


def test_closed_loop_stops_at_the_duration() -> None:
    async def factory() -> Scripted:
        return Scripted(["OK"], delay_s=0.01)

    samples = _run(lambda: closed_loop(factory, 2, Bounds(requests=None, duration_s=0.2, timeout_s=5), Samples()))
    assert 10 <= samples.completed <= 60
    assert samples.elapsed_s < 1.0


def test_a_request_over_its_timeout_counts_as_timeout() -> None:
    async def factory() -> Scripted:
        return Scripted(["200"], delay_s=5)

    samples = _run(lambda: closed_loop(factory, 3, Bounds(requests=3, duration_s=None, timeout_s=0.05), Samples()))
    assert dict(samples.codes) == {"TIMEOUT": 3}
    assert samples.latencies_ns == []


def test_open_loop_offers_the_rate_and_respects_max_in_flight() -> None:
    async def factory() -> Scripted:
        return Scripted(["200"], delay_s=0.02)

    samples = _run(lambda: open_loop(factory, 400.0, 4, Bounds(requests=120, duration_s=None, timeout_s=5), Samples()))
    assert samples.completed == 120 and samples.codes["200"] == 120
    assert Scripted.peak <= 4
    # 4 senders x 20 ms = 200/s capacity < 400/s offered: latency counted from the scheduled arrival grows
    assert max(samples.latencies_ns) > 50_000_000
    # ... and the part of it spent waiting for a free sender is the send lag, one per request sent
    assert len(samples.send_lags_ns) == 120 and max(samples.send_lags_ns) > 30_000_000
    lags, latencies = sorted(samples.send_lags_ns), sorted(samples.latencies_ns)
    assert all(lag <= latency for lag, latency in zip(lags, latencies, strict=True))


def test_both_loops_time_the_opening_of_their_connections_apart_from_the_load() -> None:
    async def factory() -> Scripted:
        await asyncio.sleep(0)  # a connect that yields, as a real one does
        return Scripted(["200"])

    bounds = Bounds(requests=10, duration_s=None, timeout_s=5)
    for samples in (
        _run(lambda: open_loop(factory, 1000.0, 4, bounds, Samples())),
        _run(lambda: closed_loop(factory, 4, bounds, Samples())),
    ):
        assert samples.connecting_ns > 0 and samples.completed == 10


def test_both_loops_open_their_connections_then_begin_at_the_start_time() -> None:
    """``start_at_unix``: every connection is open before it, no request leaves before it, and the
    run's clock starts with the first (several clients launched together begin at one instant)."""
    sent_at: list[float] = []
    opened_at: list[float] = []

    class Stamped(Scripted):
        async def send(self) -> str:
            sent_at.append(time.time())
            return await super().send()

    async def factory() -> Scripted:
        await asyncio.sleep(0)
        opened_at.append(time.time())
        return Stamped(["200"])

    for loop in (
        lambda bounds: open_loop(factory, 1000.0, 4, bounds, Samples()),
        lambda bounds: closed_loop(factory, 4, bounds, Samples()),
    ):
        sent_at.clear()
        opened_at.clear()
        start = time.time() + 0.2
        samples = _run(lambda loop=loop, start=start: loop(Bounds(10, None, 5, start_at_unix=start)))
        assert samples.completed == 10 and len(opened_at) == 4
        assert max(opened_at) < start <= min(sent_at)
        assert samples.elapsed_s < 0.2  # the wait for the start is not part of the run


def test_a_start_time_already_past_begins_at_once() -> None:
    async def factory() -> Scripted:
        return Scripted(["200"])

    began = time.monotonic()
    samples = _run(lambda: closed_loop(factory, 2, Bounds(4, None, 5, start_at_unix=time.time() - 60), Samples()))
    assert samples.completed == 4 and time.monotonic() - began < 1.0


def test_open_loop_stops_at_the_duration() -> None:
    async def factory() -> Scripted:
        return Scripted(["200"])

    samples = _run(lambda: open_loop(factory, 100.0, 8, Bounds(requests=None, duration_s=0.3, timeout_s=5), Samples()))
    assert 10 <= samples.completed <= 60  # about 30 arrivals expected


def test_open_loop_answers_every_request_before_it_stops_its_idle_workers() -> None:
    """The last requests are in flight when the schedule ends: the run waits for their answers (they
    are counted) and only then stops the idle senders."""

    async def factory() -> Scripted:
        return Scripted(["200"], delay_s=0.05)

    bounds = Bounds(requests=40, duration_s=None, timeout_s=5)
    samples = _run(lambda: open_loop(factory, 2000.0, 64, bounds, Samples()))
    assert samples.sent == samples.completed == samples.codes["200"] == 40
    assert Scripted.live == 0
    assert samples.elapsed_s >= 0.05  # the last ones' answers were awaited


def test_open_loop_raises_a_senders_bug_instead_of_hanging() -> None:
    class Broken(Scripted):
        async def send(self) -> str:
            raise RuntimeError("bug in the sender")

    async def factory() -> Scripted:
        return Broken(["200"])

    bounds = Bounds(requests=None, duration_s=60, timeout_s=5)
    with pytest.raises(RuntimeError, match="bug in the sender"):
        _run(lambda: open_loop(factory, 100.0, 2, bounds, Samples()))
