"""The dynamic batcher: SLA-class queues in, merged batches on a worker thread, one Future per request.

One :class:`BatchingExecutor` serves one model version. ``submit`` validates and queues a request
(or refuses it at once: overload, expired deadline, too many rows) and awaits its Future. A single
loop task forms batches in weighted-fair order (:mod:`.queues`), sized by :func:`.assemble.choose_batch`
within the adaptive window (:mod:`.adaptive`; while a batch fills, only arrivals that can change the
decision wake the loop: :mod:`.window`), and runs each on a thread of its own pool, since the
backend's ``infer`` blocks (inline on the loop when batches take microseconds: :mod:`.placement`).
A batch failure fails every member with the same error; ``stop`` drains.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import suppress

import numpy as np

from mcp2026ai.clock import Clock
from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import (
    DeadlineExceededError,
    InferenceFailedError,
    InvalidInputError,
    MCPError,
    ModelNotReadyError,
    OverloadedError,
)
from mcp2026ai.observability import tracing
from mcp2026ai.runtime.base import Backend, QueuedRequest, RequestDetails, RequestListBackend, Tensors
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.runtime.validation import validate_inputs, validate_output_names
from mcp2026ai.scheduling import timing
from mcp2026ai.scheduling.adaptive import AdaptiveDelay
from mcp2026ai.scheduling.admission import (
    MAX_SPREAD_SHARE,
    SHED_HOLD_S,
    SHED_MESSAGE,
    SHEDDABLE,
    DrainRate,
    EstimateSpread,
)
from mcp2026ai.scheduling.assemble import (
    choose_batch,
    merge_inputs,
    request_rows,
    select_outputs,
    shape_key,
    split_outputs,
    union_outputs,
)
from mcp2026ai.scheduling.batch_runs import BatchRuns, RunTimes
from mcp2026ai.scheduling.config import BatchingConfig
from mcp2026ai.scheduling.cpu_priority import UrgentWindow
from mcp2026ai.scheduling.queues import ClassQueues, Pending, effective_deadline
from mcp2026ai.scheduling.telemetry import SchedulerTelemetry, next_batch_id
from mcp2026ai.scheduling.window import FillingBatch, dispatch_due

logger = logging.getLogger(__name__)

DEADLINE_MESSAGE = "request timeout expired"
SWEEP_INTERVAL_S = 0.001
SWEEP_ROWS = 100
"""A sweep walks every queued request: with more than this many queued, it runs proportionally less
often (500 queued: every 5 ms), so that a deep backlog under overload does not cost the event loop
a walk over it every millisecond (~8 % of its time at 4x capacity); an expired request is then
answered up to that much later, and is never run (dispatch drops it too)."""


SHED_QUEUED_MESSAGE = "best-effort request shed for higher SLA classes (queue is full); retry later"
ANSWERS_PER_TURN = 16
"""Requests refused together (best-effort shed from the queue, expired ones) answered per event-loop turn.

Each answer resumes that request's handler, which writes its error response: about 0.1 ms of the event
loop's time. Under the co-located overload (benchmarks/overload/overload.py) shedding took up to 208
queued best-effort requests at once, and answering them in one turn held the loop for 15-32 ms, during
which finished latency-critical batches waited for it (four of a run's nine answers over 50 ms in the
batcher). In slices, the other work the loop has ready (answers of finished batches, new requests) runs
between them; the refused requests left the queue at once, so admission counts them gone."""


def answer_in_slices(pendings: Sequence[Pending], error: Callable[[], BaseException]) -> None:
    """Fail each of ``pendings`` with ``error()``, :data:`ANSWERS_PER_TURN` now and as many more on each
    following turn of the running event loop."""
    for pending in pendings[:ANSWERS_PER_TURN]:
        if not pending.future.done():
            pending.future.set_exception(error())
    if len(pendings) > ANSWERS_PER_TURN:
        asyncio.get_running_loop().call_soon(answer_in_slices, pendings[ANSWERS_PER_TURN:], error)


class BatchingExecutor:
    """Executor that merges concurrent requests of one model version into batches."""

    def __init__(
        self,
        backend: Backend,
        config: BatchingConfig | None = None,
        *,
        model: str = "",
        version: str = "",
        clock: Clock = time.monotonic,
        stats: ModelStats | None = None,
        urgent_window: UrgentWindow | None = None,
    ) -> None:
        self.backend = backend
        self._request_list = backend if isinstance(backend, RequestListBackend) else None
        """The backend when it takes batches as request lists (checked once: a runtime protocol check costs
        tens of microseconds, per batch a fifth of a tiny model's whole hop)."""
        self.stats = stats
        self.config = config or BatchingConfig.from_contract(None, backend.signature)
        self._clock = clock
        self._queues = ClassQueues(self.config.classes, self.config.retry_after_s)
        self._adaptive = AdaptiveDelay(self.config.adaptive, self.config.max_queue_delay_ms, clock)
        self._telemetry = SchedulerTelemetry(model or "-", version or "-", self.config.max_batch_size)
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(self.config.max_concurrent_batches)
        self._batches: set[asyncio.Task[None]] = set()
        self._batch_rows: dict[asyncio.Task[None], int] = {}
        """Rows of each batch dispatched and not yet done."""
        self._loop_task: asyncio.Task[None] | None = None
        self._runs = BatchRuns(
            self.config.max_concurrent_batches,
            self.config.inline_below_ms,
            self.config.bulk_nice,
            clock,
            urgent_window=urgent_window,
        )
        self._rate = DrainRate(self.config.max_concurrent_batches)
        self._spread = EstimateSpread()
        self._running_since: dict[int, float] = {}
        """When each running batch started (batch id -> clock)."""
        self._at_risk_since = -math.inf
        self._accepting = False
        self._closing = False
        self._last_sweep = -math.inf
        self._filling: FillingBatch | None = None
        self._turn_task: asyncio.Task[object] | None = None
        """The task whose request ran at once during this turn of the event loop (:meth:`_runs_at_once`)."""
        self._targets = {*self.config.preferred_batch_sizes, self.config.merge_rows}

    async def start(self) -> None:
        if self._loop_task is not None:
            return
        self._runs.start()
        self._loop_task = asyncio.create_task(self._run(), name="mcp-batcher")
        self._accepting = True
        self._telemetry.window(self.window_ms)

    @property
    def window_ms(self) -> float:
        """The current batching window (adaptive when batching is on)."""
        return self._adaptive.delay_ms if self.config.batching else 0.0

    @property
    def backlog(self) -> int:
        return self._queues.backlog

    async def submit(
        self,
        inputs: Tensors,
        outputs: Sequence[str] | None,
        *,
        sla_class: SLAClass,
        deadline: float | None,
        details: RequestDetails | None = None,
    ) -> dict[str, np.ndarray]:
        """Queue one request and await its outputs; ``deadline`` is an instant on the executor's clock."""
        if not self._accepting:
            raise ModelNotReadyError("model version is not accepting requests")
        pending = self._admit(inputs, outputs, sla_class, deadline)
        pending.details = details
        self._enqueue(pending)
        self._telemetry.queue_depth(self._queues, sla_class)
        if self._runs_at_once():
            await self._execute(self._queues.take(1))  # inline: answered before this returns
        elif self._filling is None or self._filling.changed_by(pending):
            self._wakeup.set()
        try:
            return await pending.future
        finally:
            if pending.batch_id is not None:
                tracing.annotate_batch(pending.batch_id, pending.batch_size)
                timing.report(pending.queue_ns, pending.compute_ns)

    def _runs_at_once(self) -> bool:
        """Whether the request just queued runs now, in its caller's task, as the batcher's loop would
        run it on its next turn anyway: it is alone in an idle executor (no batch running or filling,
        no batching window), batches run inline on the event loop, and no other task's request ran
        this way earlier in this turn of the loop (requests arriving together still wait for the
        loop, which batches them; one caller's requests one after another do not arrive together).
        The turn it saves (a wake-up, a pass over the queues, a hand-back) is most of a tiny model's
        time in its executor, and of a pipeline's hop between steps."""
        if not self._runs.inline or self._running_since or self._filling is not None:
            return False
        if self._closing or self.window_ms or self._queues.backlog != 1:
            return False
        task = asyncio.current_task()
        if self._turn_task is None:
            asyncio.get_running_loop().call_soon(self._next_turn)
        elif self._turn_task is not task:
            return False
        self._turn_task = task
        return True

    def _next_turn(self) -> None:
        self._turn_task = None

    def _admit(
        self, inputs: Tensors, outputs: Sequence[str] | None, sla_class: SLAClass, deadline: float | None
    ) -> Pending:
        validate_inputs(self.backend.signature, inputs)
        if outputs:
            validate_output_names(self.backend.signature, outputs)
        rows = request_rows(inputs) if self.config.batch_dim else 1
        if rows > self.config.max_batch_size:
            raise InvalidInputError(f"request has {rows} rows; max_batch_size is {self.config.max_batch_size}")
        now = self._clock()
        limit = effective_deadline(now, self.config.classes[sla_class].deadline_ms, deadline)
        future: asyncio.Future[dict[str, np.ndarray]] = asyncio.get_running_loop().create_future()
        key = shape_key(inputs) if self.config.batch_dim else None
        return Pending(inputs, outputs, sla_class, rows, key, now, limit, future)

    def _enqueue(self, pending: Pending) -> None:
        """Queue ``pending``, or refuse it (counted) when already expired, when it would wait past its
        deadline even after best-effort requests were shed for it, or when its class queue is full."""
        if pending.expired(pending.enqueued_at):
            self._telemetry.rejected(pending.sla_class, "deadline")
            raise DeadlineExceededError(DEADLINE_MESSAGE)
        try:
            if pending.sla_class is SHEDDABLE and self._shedding(pending.enqueued_at):
                raise OverloadedError(SHED_MESSAGE, self.config.retry_after_s)
            if pending.deadline is not None:
                budget_s = self._admission_budget_s(pending.sla_class, pending.deadline - pending.enqueued_at)
                pending.expected_s = self._make_room(pending.sla_class, budget_s, pending.rows)
            if self._queues.is_full(pending.sla_class) and pending.sla_class is not SHEDDABLE:
                self._shed_best_effort(lambda: self._queues.is_full(pending.sla_class))
            self._queues.push(pending)
        except OverloadedError:
            self._telemetry.rejected(pending.sla_class, "overloaded")
            raise

    def check_admission(self, sla_class: SLAClass) -> None:
        """Refuse (counted) a request of ``sla_class`` that would not be queued if it arrived now: its
        best-effort queue is full, or, for a class with a deadline, the backlog that shedding
        best-effort cannot remove would already outlast it. Checked before the request's body is read."""
        if self._accepting and not self._would_queue(sla_class):
            self._telemetry.rejected(sla_class, "overloaded")
            shedding = sla_class is SHEDDABLE and self._shedding(self._clock())
            message = SHED_MESSAGE if shedding else f"{sla_class.value} queue is full; retry later"
            raise OverloadedError(message, self.config.retry_after_s)

    def _would_queue(self, sla_class: SLAClass) -> bool:
        if sla_class is SHEDDABLE:
            return not self._queues.is_full(sla_class) and not self._shedding(self._clock())
        deadline_ms = self.config.classes[sla_class].deadline_ms
        if deadline_ms is None:
            return True
        budget_s = self._admission_budget_s(sla_class, deadline_ms / 1000)
        expected_s = self._seconds_to_answer(sla_class, 1, excluding=SHEDDABLE)
        return expected_s <= budget_s or self._would_start_at_once(excluding=SHEDDABLE)

    def _admission_budget_s(self, sla_class: SLAClass, deadline_s: float) -> float:
        """The longest expected answer a request of ``sla_class`` with ``deadline_s`` left is admitted
        with: the class's share of its deadline (``ClassPolicy.admit_within``) less how much later
        than expected its requests have lately been answered (admission.py, EstimateSpread; the
        most it may take while that is not known yet)."""
        share = deadline_s * self.config.classes[sla_class].admit_within
        most = share * MAX_SPREAD_SHARE
        late_s = self._spread.late_s(sla_class, self._clock())
        return share - (most if late_s is None else min(late_s, most))

    def _seconds_to_answer(self, sla_class: SLAClass, rows: int, excluding: SLAClass | None = None) -> float:
        """How long a request of ``sla_class`` with ``rows`` rows, queued now, would take to be answered."""
        ahead = self._queues.rows_ahead(
            sla_class, rows, excluding=excluding, now=self._clock(), drain_rows_per_s=self._rate.rows_per_s
        )
        return self._rate.seconds_to_answer(ahead, self.config.merge_rows, self._slot_free_in_s())

    def _would_start_at_once(self, excluding: SLAClass | None = None) -> bool:
        """Whether a request queued now would run at once: a batch slot is free and nothing is queued
        (``excluding`` one class, the one that would be shed). Such a request is never refused for its
        deadline: nothing is ahead of it to wait for or to shed, and refusing it would refuse the model
        its own speed (an idle server whose batch is estimated slower than the budget, its first
        batches measured cold, refused every latency-critical request)."""
        if len(self._running_since) >= self.config.max_concurrent_batches:
            return False
        return not any(self._queues.rows(cls) for cls in SLAClass if cls is not excluding)

    def _slot_free_in_s(self) -> float:
        """0 while a batch slot is free; else how long, by the measured batch time, until the running
        batch that started first ends (0 once it has run that long)."""
        if len(self._running_since) < self.config.max_concurrent_batches or self._rate.batch_s is None:
            return 0.0
        return max(0.0, min(self._running_since.values()) + self._rate.batch_s - self._clock())

    def _shedding(self, now: float) -> bool:
        """Whether best-effort is being refused: a deadline class was at risk within SHED_HOLD_S."""
        return now - self._at_risk_since <= SHED_HOLD_S

    def _make_room(self, sla_class: SLAClass, budget_s: float, rows: int) -> float:
        """Shed best-effort requests while the backlog ahead would make this one miss its deadline;
        refuse it if it still would (it would only expire in the queue), unless it would run at once.
        Returns the seconds to its answer expected now."""
        expected_s = self._seconds_to_answer(sla_class, rows)
        if sla_class is not SHEDDABLE and expected_s > budget_s and not self._would_start_at_once():
            # Best-effort gives way: what is queued is answered 429 now (its fair share would keep
            # delaying the deadline classes), and new best-effort is refused until they keep up.
            self._at_risk_since = self._clock()
            self._shed_best_effort(lambda: True)
            expected_s = self._seconds_to_answer(sla_class, rows)
        if expected_s > budget_s and not self._would_start_at_once():
            answered_ms = expected_s * 1000
            raise OverloadedError(
                f"{sla_class.value} request would be answered in about {answered_ms:.0f} ms, past the "
                f"{budget_s * 1000:.0f} ms it is admitted within (its deadline, less headroom); retry later",
                self.config.retry_after_s,
            )
        return expected_s

    def _shed_best_effort(self, still_needed: Callable[[], bool]) -> None:
        """Take the newest queued best-effort requests out of the queue while ``still_needed()``, and
        answer them 429 (a few per event-loop turn: :func:`answer_in_slices`)."""
        victims: list[Pending] = []
        while still_needed():
            victim = self._queues.evict_newest(SHEDDABLE)
            if victim is None:
                break
            self._telemetry.rejected(SHEDDABLE, "overloaded")
            victims.append(victim)
        self._telemetry.queue_depth(self._queues, SHEDDABLE)
        self._telemetry.shed(victims, self._clock())
        retry_after_s = self.config.retry_after_s
        answer_in_slices(victims, lambda: OverloadedError(SHED_QUEUED_MESSAGE, retry_after_s))

    async def stop(self, drain_timeout_s: float) -> None:
        """Stop accepting; run what is queued within the timeout, fail the rest with ModelNotReadyError."""
        self._accepting = False
        self._closing = True
        self._wakeup.set()
        task = self._loop_task
        if task is None:
            return
        loop = asyncio.get_running_loop()
        end = loop.time() + max(0.0, drain_timeout_s)
        done, _ = await asyncio.wait({task}, timeout=max(0.0, drain_timeout_s))
        if not done:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        leftovers = self._queues.drain()
        self._telemetry.rejected_all(leftovers, "shutdown")
        self._fail(leftovers, lambda: ModelNotReadyError("model version shut down before the request ran"))
        self._telemetry.queue_depths(self._queues)
        remaining = end - loop.time()
        if self._batches and remaining > 0:
            await asyncio.wait(set(self._batches), timeout=remaining)
        self._runs.shutdown()

    async def _run(self) -> None:
        try:
            while True:
                await self._slots.acquire()
                batch = await self._next_batch()
                if batch is None:
                    self._slots.release()
                    return
                if self._runs.inline:  # it blocks the loop anyway (and inline means one slot): a task of its
                    await self._execute_and_free(batch)  # own would only cost a turn of the loop before it runs
                    continue
                task = asyncio.create_task(self._execute_and_free(batch))
                self._batches.add(task)
                self._batch_rows[task] = sum(pending.rows for pending in batch)
                task.add_done_callback(self._batch_done)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("batcher loop failed")
            self._accepting = False
            message = f"scheduler failed: {type(exc).__name__}: {exc}"
            self._fail(self._queues.drain(), lambda: InferenceFailedError(message))

    def _batch_done(self, task: asyncio.Task[None]) -> None:
        self._batches.discard(task)
        self._batch_rows.pop(task, None)

    async def _next_batch(self) -> list[Pending] | None:
        while True:
            self._wakeup.clear()
            now = self._clock()
            self._sweep(now)
            run, more_waiting = self._queues.head_run(self.config.merge_rows)
            if not run:
                if self._closing:
                    return None
                await self._wakeup.wait()
                continue
            due = dispatch_due(run, self._current_window_s())
            share = self._idle_share([pending.rows for pending in run])
            count = choose_batch(
                [pending.rows for pending in run],
                share or self.config.merge_rows,
                self.config.preferred_batch_sizes,
                more_waiting=more_waiting or share is not None,
                window_elapsed=self._closing or now >= due,
            )
            if count:
                batch = self._live(self._queues.take(count), now)
                self._telemetry.queue_depths(self._queues)
                if batch:
                    return batch
                continue
            self._filling = FillingBatch.of(run, due, self._targets)
            try:
                await self._wait_for_wakeup(due - now)
            finally:
                self._filling = None

    def _idle_share(self, rows: list[int]) -> int | None:
        """With several instances and at least two rows queued, the rows one batch takes so that the
        rows queued and running end up evenly split among all the instances: a busy one takes its
        share of the queue when it frees (None: no split, the usual batching rule). Taking everything
        beside an instance about to free left that one idle, and every row queued behind one long
        batch (ResNet-50, two single-threaded instances at 8 concurrent requests: batches of 1 and 6)."""
        instances = self.config.max_concurrent_batches
        queued = sum(rows)
        if instances < 2 or queued < 2:
            return None
        running = sum(self._batch_rows.values())
        share = -(-(queued + running) // instances)  # every instance's rows, queued and running, even
        return share if share < self.config.merge_rows else None

    async def _wait_for_wakeup(self, timeout_s: float) -> None:
        """Until ``submit`` (or ``stop``) sets the wake-up event, or ``timeout_s`` passes."""
        timer = asyncio.get_running_loop().call_later(max(0.0, timeout_s), self._wakeup.set)
        try:
            await self._wakeup.wait()
        finally:
            timer.cancel()

    def _current_window_s(self) -> float:
        if not self.config.batching:
            return 0.0
        before = self._adaptive.delay_ms
        after = self._adaptive.update(self._queues.backlog)
        if after != before:
            self._telemetry.window(after)
        return after / 1000.0

    def _sweep(self, now: float) -> None:
        """Reject expired requests anywhere in the queues (at most every SWEEP_INTERVAL_S, less often for a
        deep backlog: it is O(backlog))."""
        if now - self._last_sweep < SWEEP_INTERVAL_S * max(1.0, self._queues.backlog / SWEEP_ROWS):
            return
        self._last_sweep = now
        expired, abandoned = self._queues.sweep(now)
        if expired or abandoned:
            self._reject_expired(expired)
            self._telemetry.queue_depths(self._queues)

    def _live(self, batch: list[Pending], now: float) -> list[Pending]:
        """The members still worth running: expired ones are rejected, abandoned ones dropped."""
        live = [pending for pending in batch if not pending.future.done() and not pending.expired(now)]
        if len(live) < len(batch):
            self._reject_expired([p for p in batch if not p.future.done() and p.expired(now)])
        return live

    def _reject_expired(self, expired: list[Pending]) -> None:
        self._telemetry.rejected_all(expired, "deadline")
        answer_in_slices(expired, lambda: DeadlineExceededError(DEADLINE_MESSAGE))

    async def _execute_and_free(self, batch: list[Pending]) -> None:
        """Run a batch the loop dispatched, then free its slot and wake the loop for the next."""
        try:
            await self._execute(batch)
        finally:
            self._slots.release()
            self._wakeup.set()

    async def _execute(self, batch: list[Pending]) -> None:
        batch_id = next_batch_id()
        now = self._clock()
        for pending in batch:
            pending.batch_id, pending.batch_size = batch_id, len(batch)
            pending.queue_ns = int((now - pending.enqueued_at) * 1e9)
        run: RunTimes | None = None
        try:
            self._running_since[batch_id] = now
            self._telemetry.dispatched(batch, now)
            if self.stats is not None:
                self.stats.record_queue(len(batch), int(sum(now - p.enqueued_at for p in batch) * 1e9))
            results, run = await self._infer(batch)
        except MCPError as exc:
            shared: MCPError = exc
            self._fail(batch, lambda: shared)
        except Exception as exc:
            logger.exception("batch of %d requests failed", len(batch))
            error = InferenceFailedError(f"batch failed: {type(exc).__name__}: {exc}")
            self._fail(batch, lambda: error)
        else:
            for pending, outputs in zip(batch, results, strict=True):
                if pending.future.done():
                    continue
                if isinstance(outputs, MCPError):  # a request answered with its own error (Python models)
                    pending.future.set_exception(outputs)
                else:
                    pending.future.set_result(outputs)
            self._observe_spread(batch)
        finally:
            self._running_since.pop(batch_id, None)
            self._telemetry.batch_done(batch, now, run, self._clock())
            self._observe_latency(batch)

    def _observe_spread(self, answered: list[Pending]) -> None:
        """How much later than expected at admission each answered request with a deadline came."""
        now = self._clock()
        for pending in answered:
            if pending.expected_s is not None:
                self._spread.observe(pending.sla_class, now, now - pending.enqueued_at - pending.expected_s)

    async def _infer(self, batch: list[Pending]) -> tuple[list[dict[str, np.ndarray] | MCPError], RunTimes]:
        """Each request's outputs, and the run's times; the batch runs as :class:`BatchRuns` decides (of
        normal priority when it holds a latency-critical request)."""
        wanted = [pending.outputs for pending in batch]
        urgent = any(pending.sla_class is SLAClass.LATENCY_CRITICAL for pending in batch)
        started = time.perf_counter_ns()
        if self._request_list is not None:
            return await self._infer_list(self._request_list, batch, urgent, started)
        if len(batch) == 1:
            outputs, run = await self._runs.run(self.backend.infer, batch[0].inputs, batch[0].outputs, urgent)
            self._record_execution(batch, started, started, time.perf_counter_ns())
            self._rate.observe(batch[0].rows, (time.perf_counter_ns() - started) / 1e9)
            return [select_outputs(outputs, batch[0].outputs)], run
        inputs, offsets = merge_inputs([pending.inputs for pending in batch])
        merged = time.perf_counter_ns()
        outputs, run = await self._runs.run(self.backend.infer, inputs, union_outputs(wanted), urgent)
        ran = time.perf_counter_ns()
        results: list[dict[str, np.ndarray] | MCPError] = list(split_outputs(outputs, offsets, wanted))
        self._record_execution(batch, started, merged, ran)
        self._rate.observe(sum(pending.rows for pending in batch), (time.perf_counter_ns() - started) / 1e9)
        return results, run

    async def _infer_list(
        self, backend: RequestListBackend, batch: list[Pending], urgent: bool, started: int
    ) -> tuple[list[dict[str, np.ndarray] | MCPError], RunTimes]:
        """A backend that takes the batch as a list of requests (Triton's Python models), each kept whole."""
        items = [QueuedRequest(p.inputs, p.outputs, p.deadline, p.details) for p in batch]
        answers: list[dict[str, np.ndarray] | MCPError] = []

        def run(_inputs: Tensors, _outputs: Sequence[str] | None) -> dict[str, np.ndarray]:
            answers.extend(backend.infer_requests(items))
            return {}

        _, times = await self._runs.run(run, batch[0].inputs, None, urgent)
        ran = time.perf_counter_ns()
        self._record_execution(batch, started, started, ran)
        self._rate.observe(sum(pending.rows for pending in batch), (ran - started) / 1e9)
        return answers, times

    def _record_execution(self, batch: list[Pending], started: int, merged: int, ran: int) -> None:
        self._telemetry.executed((ran - merged) / 1e9)
        for pending in batch:
            pending.compute_ns = ran - started
        if self.stats is not None:
            output_ns = time.perf_counter_ns() - ran
            rows = sum(pending.rows for pending in batch)
            self.stats.record_execution(
                ran - merged, input_ns=merged - started, output_ns=output_ns, requests=len(batch), rows=rows
            )

    def _observe_latency(self, batch: list[Pending]) -> None:
        now = self._clock()
        for pending in batch:
            self._adaptive.observe((now - pending.enqueued_at) * 1000.0)

    @staticmethod
    def _fail(pendings: Sequence[Pending], error: Callable[[], BaseException]) -> None:
        for pending in pendings:
            if not pending.future.done():
                pending.future.set_exception(error())
