"""Load generation: closed loop (fixed concurrency) and open loop (Poisson arrivals).

Closed loop: ``concurrency`` workers, each with its own sender, send back to back until ``requests``
were sent or ``duration_s`` passed; latency is measured per request from send to reply.

Open loop: arrivals at mean ``rate`` per second with exponential gaps (seeded), served by at most
``max_in_flight`` senders. Latency counts from the *scheduled* arrival, so when every sender is busy
the wait in the client shows up in the figures instead of silently lowering the offered load.

Both stop on whichever bound comes first; every request ends within ``timeout_s``. With
``start_at_unix`` both open their connections first and begin (and start their clock) at that instant:
several clients launched together then load the server at once, instead of one sending while the
others still open their connections.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

OK_CODES = frozenset({"200", "OK"})
TIMEOUT_CODE = "TIMEOUT"
CONNECTION_CODE = "CONNECTION_ERROR"


class Sender(Protocol):
    async def send(self) -> str:
        """Send one request; the reply's status code (``200``, ``OK``, ``503``, ``UNAVAILABLE``...)."""
        ...

    async def close(self) -> None: ...


SenderFactory = Callable[[], Awaitable[Sender]]


@dataclass
class Samples:
    """What a run observed: latencies of successful requests, and a count per status code."""

    latencies_ns: list[int] = field(default_factory=list)
    send_lags_ns: list[int] = field(default_factory=list)
    """Open loop: how late each request left against its scheduled arrival (every sender busy, or
    this client's own event loop behind): the part of its latency spent in the client."""
    codes: Counter[str] = field(default_factory=Counter)
    started_ns: int = 0
    finished_ns: int = 0
    sent: int = 0
    connecting_ns: int = 0
    """How long opening the connections took, before the clock started (thousands of connections at
    once can take seconds: the server's accept queue overflows and the kernel retries)."""

    def record(self, code: str, latency_ns: int) -> None:
        self.codes[code] += 1
        if code in OK_CODES:
            self.latencies_ns.append(latency_ns)

    @property
    def completed(self) -> int:
        return sum(self.codes.values())

    @property
    def elapsed_now_s(self) -> float:
        """Seconds since the run started (0 before it did)."""
        return (time.perf_counter_ns() - self.started_ns) / 1e9 if self.started_ns else 0.0

    @property
    def elapsed_s(self) -> float:
        return max(self.finished_ns - self.started_ns, 1) / 1e9


@dataclass(frozen=True)
class Bounds:
    requests: int | None
    duration_s: float | None
    timeout_s: float
    start_at_unix: float | None = None
    """Begin sending at this Unix time (at once when it has passed)."""


class _Budget:
    """Hands out permission to send until the request count or the duration runs out."""

    def __init__(self, bounds: Bounds, samples: Samples) -> None:
        self._left = bounds.requests if bounds.requests is not None else -1
        self._end = time.perf_counter_ns() + int(bounds.duration_s * 1e9) if bounds.duration_s else None
        self._samples = samples

    def take(self) -> bool:
        if self._left == 0 or (self._end is not None and time.perf_counter_ns() >= self._end):
            return False
        self._left -= 1
        self._samples.sent += 1
        return True


async def _one(sender: Sender, samples: Samples, timeout_s: float, since_ns: int | None = None) -> None:
    now = time.perf_counter_ns()
    started = since_ns if since_ns is not None else now
    if since_ns is not None:
        samples.send_lags_ns.append(now - since_ns)
    try:
        async with asyncio.timeout(timeout_s):
            code = await sender.send()
    except TimeoutError:
        code = TIMEOUT_CODE
    except (ConnectionError, OSError):
        code = CONNECTION_CODE
    samples.record(code, time.perf_counter_ns() - started)


async def _open_senders(factory: SenderFactory, count: int, samples: Samples) -> list[Sender]:
    started = time.perf_counter_ns()
    senders = list(await asyncio.gather(*(factory() for _ in range(count))))
    samples.connecting_ns = time.perf_counter_ns() - started
    return senders


async def _wait_for_start(bounds: Bounds) -> None:
    """Until ``bounds.start_at_unix``, when it is set and still ahead."""
    if bounds.start_at_unix is not None:
        await asyncio.sleep(max(0.0, bounds.start_at_unix - time.time()))


async def _close(senders: list[Sender]) -> None:
    await asyncio.gather(*(sender.close() for sender in senders))


async def closed_loop(factory: SenderFactory, concurrency: int, bounds: Bounds, samples: Samples) -> Samples:
    senders = await _open_senders(factory, concurrency, samples)  # connections exist before the clock starts
    await _wait_for_start(bounds)
    budget = _Budget(bounds, samples)

    async def worker(sender: Sender) -> None:
        while budget.take():
            await _one(sender, samples, bounds.timeout_s)

    samples.started_ns = time.perf_counter_ns()
    try:
        await asyncio.gather(*(worker(sender) for sender in senders))
    finally:
        samples.finished_ns = time.perf_counter_ns()
        await _close(senders)
    return samples


class _Drained:
    """Set once every scheduled request was sent and answered (open loop)."""

    def __init__(self, arrivals: asyncio.Queue[int]) -> None:
        self.arrivals = arrivals
        self.busy = 0
        self.scheduled_all = False
        self.event = asyncio.Event()

    def check(self) -> None:
        if self.scheduled_all and self.busy == 0 and self.arrivals.empty():
            self.event.set()


def poisson_offsets(rate: float, seed: int, chunk: int = 4096) -> Iterator[float]:
    """Arrival instants (seconds from the start) of a Poisson process of ``rate`` per second."""
    rng = np.random.default_rng(seed)
    now = 0.0
    while True:
        gaps = rng.exponential(1.0 / rate, size=chunk)
        for instant in np.cumsum(gaps) + now:
            yield float(instant)
        now += float(gaps.sum())


async def open_loop(
    factory: SenderFactory, rate: float, max_in_flight: int, bounds: Bounds, samples: Samples, seed: int = 0
) -> Samples:
    senders = await _open_senders(factory, max_in_flight, samples)
    await _wait_for_start(bounds)
    arrivals: asyncio.Queue[int] = asyncio.Queue()
    drained = _Drained(arrivals)

    async def worker(sender: Sender) -> None:
        while True:
            scheduled = await arrivals.get()
            drained.busy += 1
            try:
                await _one(sender, samples, bounds.timeout_s, since_ns=scheduled)
            finally:
                drained.busy -= 1
                drained.check()

    workers = [asyncio.create_task(worker(sender)) for sender in senders]
    for task in workers:
        task.add_done_callback(lambda _: drained.event.set())  # a worker can only end by a bug: stop
    samples.started_ns = start = time.perf_counter_ns()
    budget = _Budget(bounds, samples)
    try:
        for offset in poisson_offsets(rate, seed):
            if drained.event.is_set():
                break
            if (bounds.duration_s is not None and offset >= bounds.duration_s) or not budget.take():
                break
            due = start + int(offset * 1e9)
            delay = (due - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            arrivals.put_nowait(due)
        # the idle workers are stopped only once the last request is answered: waking hundreds of them
        # while replies are still arriving would put the client's own work into the last latencies
        drained.scheduled_all = True
        drained.check()
        await drained.event.wait()
    finally:
        samples.finished_ns = time.perf_counter_ns()
        for task in workers:
            task.cancel()
        ended = await asyncio.gather(*workers, return_exceptions=True)
        await _close(senders)
    failed = [error for error in ended if isinstance(error, Exception)]
    if failed:
        raise failed[0]  # a worker's bug, not a request's failure (those are counted by code)
    return samples
