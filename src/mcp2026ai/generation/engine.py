"""The generation engine: continuous batching of token generation on one decoder.

One thread runs the steps; callers submit from an event loop and read a :class:`GenerationStream`.
Between steps the waiting queue admits requests in SLA-class fair order while KV slots and blocks
are free (``scheduler.py``). A step then has three parts, as in vLLM v1:

1. the step scheduler decides what the step runs and returns it as a frozen ``StepPlan``
   (``step_scheduler.py``, ``step_plan.py``): aborted and text-stopped choices leave, preempted
   requests are recomputed, admitted ones take their slots, the most recent are preempted when
   KV blocks run dry, late prompts are refused, every decoding sequence gets a decode row or a
   draft verification, and the rest of the token budget goes to prompt chunks (``prefill.py``);
2. the step executor runs the plan against the decoder and returns its logits rows
   (``step_executor.py``);
3. output processing samples, checks the token stops, queues each request's new tokens and frees
   the finished sequences (``output_processor.py``).

The sequences holding KV slots and blocks, the prompts being filled and the preempted requests are
the running batch (``running_batch.py``). Detokenizing, stop strings and logprobs run on the
caller's event loop while the next step runs (``text_stage.py``); a choice ended there by a stop
string leaves the batch at the next step, its extra token dropped.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import InvalidArgumentError, MCPError, OverloadedError, UnavailableError
from mcp2026ai.generation.adapters import AdapterSlots
from mcp2026ai.generation.class_precedence import gives_way
from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.grammar import Grammars
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.kv_blocks import DEFAULT_BLOCK_SIZE, KVBlockPool, pool_blocks
from mcp2026ai.generation.kv_slots import SlotTable
from mcp2026ai.generation.output_processor import OutputProcessor
from mcp2026ai.generation.prefix_cache import PrefixCache
from mcp2026ai.generation.pressure import PrefillPace, QueueWait
from mcp2026ai.generation.request_checks import check_request
from mcp2026ai.generation.running_batch import RunningBatch
from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.scheduler import WaitingQueue
from mcp2026ai.generation.speculative import Speculation
from mcp2026ai.generation.step_executor import StepExecutor
from mcp2026ai.generation.step_scheduler import StepScheduler
from mcp2026ai.generation.stopping import TokenStop
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.telemetry import EngineTelemetry
from mcp2026ai.generation.text_stage import TextStage
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import FinishReason, GenerationRequest
from mcp2026ai.ir.llm_info import LLMInfo, load_llm_info
from mcp2026ai.ir.lora_adapter import AdapterWeights
from mcp2026ai.ir.lora_graph import LoraLayout
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

log = logging.getLogger(__name__)


class Engine:
    """Generation for one model: its decoder, tokenizer, KV slots and waiting queue."""

    def __init__(
        self,
        name: str,
        decoder: OnnxDecoder,
        tokenizer: TextTokenizer,
        info: LLMInfo,
        config: EngineConfig,
    ) -> None:
        self.name = name
        self.decoder = decoder
        self.tokenizer = tokenizer
        self.info = info
        self.config = config
        self.max_len = decoder.max_len
        self.slots = SlotTable(decoder.num_slots, decoder.max_len)
        pool = pool_blocks(config.kv_cache_mb, decoder.bytes_per_token, decoder.num_slots * decoder.max_len)
        self.blocks = KVBlockPool(pool, DEFAULT_BLOCK_SIZE, prefix_caching=False)
        self.waiting: WaitingQueue[Job] = WaitingQueue(config.classes, config.retry_after_s)
        self.telemetry = EngineTelemetry(name)
        self.queue_wait = QueueWait()
        """Measured slot turnover: the wait a new request would face (429 beyond its TTFT budget)."""
        self.prefill_pace = PrefillPace()
        self._prefill_backlog = 0
        """Prompt tokens still to run into the slots being filled (set at the end of each step)."""
        self._yieldable_slots = 0
        """Slots best-effort requests hold (set at the end of each step): a latency-critical one takes them."""
        self._step_s = 0.0
        capacity = int(config.prefix_cache_mb * (1 << 20))
        self.prefix_cache = PrefixCache(capacity) if capacity > 0 else None
        self.grammars = Grammars(tokenizer.path, info.vocab_size, info.eos_token_ids)
        self.speculation = Speculation(config.speculative_tokens)
        self.batch = RunningBatch(self.slots, self.blocks)
        self.adapters = AdapterSlots(decoder.lora) if decoder.lora is not None else None
        """The LoRA adapters loaded (None: a decoder without adapter inputs, ``max_loras`` 0)."""
        decoder.pad_lone_rows = config.batch_invariance == BatchInvariance.ON or (
            config.batch_invariance == BatchInvariance.AUTO and not decoder.lone_row_matches_batched()
        )
        self.scheduler = StepScheduler(
            self.batch,
            config,
            self.speculation,
            self.prefill_pace,
            SequenceFactory(self.info, self.grammars),
            self.prefix_cache,
            decoder.multi_row_logits,
            decoder.pad_lone_rows,
        )
        self.executor = StepExecutor(decoder, self.prefix_cache)
        self.outputs = OutputProcessor(self.batch, self.speculation, self.telemetry)
        self._lock = threading.Condition()
        self._stopping = False
        self._draining = False
        self._admitting_jobs: list[Job] = []
        """Jobs taken from the waiting queue for the step in progress (neither waiting nor running yet)."""
        self.prefill_pace.probe(lambda tokens: decoder.prefill(0, tokens), self.max_len - 1)
        decoder.release(0)
        self._finished_weakly = weakly(self._finished)
        self._abort_weakly = weakly(self._abort)
        self._thread = threading.Thread(target=self._loop, name=f"generate-{name}", daemon=True)
        self._thread.start()

    @property
    def speculative_tokens(self) -> int:
        """Draft tokens per speculative step (0: off); the serving config may change it while running."""
        return self.speculation.draft_tokens

    @speculative_tokens.setter
    def speculative_tokens(self, tokens: int) -> None:
        self.speculation.draft_tokens = tokens

    # submission (event loop) -------------------------------------------------------------------
    def submit(self, request: GenerationRequest) -> GenerationStream:
        """Queue ``request``; its stream yields deltas. InvalidArgumentError if it cannot fit the context,
        OverloadedError if its SLA class queue is full or its wait would exceed its TTFT budget,
        UnavailableError after drain() or close()."""
        max_tokens = check_request(request, self.info, self.slots.num_slots, self.blocks, self.max_len)
        if request.constraint is not None:
            self.grammars.compile(request.constraint)  # refuses what it cannot honour; cached after the first
        loop = asyncio.get_running_loop()
        finished, abort = self._finished_weakly, self._abort_weakly  # the lambdas must not hold the engine
        stream = GenerationStream(request.request_id, len(request.prompt_ids), loop, self.config.stream_buffer_deltas)
        job = Job(
            request=request,
            stream=stream,
            max_tokens=max_tokens,
            abandoned=loop.create_future(),
            accepted_at=time.monotonic(),
            span=self.telemetry.start_span(request),
            text=TextStage(self.tokenizer, request.params, lambda reason, generated: finished(job, reason, generated)),
        )
        stream.on_abort = lambda: abort(job)
        with self._lock:
            try:
                if self._stopping or self._draining:
                    raise UnavailableError(f"model {self.name!r} is shutting down")
                if request.adapter is not None:  # under the lock: an unload frees no slot a queued job holds
                    job.adapter_slot, job.prefix_root = self._adapter_slots().take(request.adapter)
                job.deadline = self._admission_deadline(request, job.accepted_at)
                self.waiting.push(job, request.sla_class, request.params.n, job.abandoned, job.deadline)
            except MCPError:
                self.telemetry.rejected(job)
                raise
            self._lock.notify()
        return stream

    # adapters (event loop) --------------------------------------------------------------------
    def load_adapter(self, key: str, adapter: AdapterWeights) -> None:
        """Hold ``adapter`` under ``key`` (checked to fit this decoder by the caller); requests naming ``key``
        run with it from now on. InvalidArgumentError when ``max_loras`` are loaded already."""
        self._adapter_slots().load(key, adapter)

    def unload_adapter(self, key: str) -> None:
        """New requests naming ``key`` are refused (404); those that took it finish with it."""
        self._adapter_slots().unload(key)
        with self._lock:
            self._lock.notify()

    def _adapter_slots(self) -> AdapterSlots:
        if self.adapters is None:
            raise InvalidArgumentError(
                f"model {self.name!r} runs without LoRA adapters (start the server with --max-loras)"
            )
        return self.adapters

    def _reap_adapters(self) -> None:
        """Called under the lock: free the slots of unloaded adapters no request holds any more."""
        if self.adapters is None:
            return
        jobs = [*self.waiting.jobs(), *self._admitting_jobs, *self.batch.preempted]
        jobs += [sequence.job for sequence in self.batch.running.values()]
        self.adapters.reap({job.adapter_slot for job in jobs})

    def _admission_deadline(self, request: GenerationRequest, now: float) -> float | None:
        """Called under the lock: the latest time ``request`` may still wait (None: no TTFT budget);
        OverloadedError at once when the queue ahead already takes longer than the budget."""
        budget = request.ttft_budget_s
        if budget is None:
            return None
        free = self.slots.num_slots - self.slots.active - len(self.batch.preempted)
        if request.sla_class == SLAClass.LATENCY_CRITICAL and self.scheduler.class_precedence:
            free += self._yieldable_slots
        slot_wait = self.queue_wait.estimate(self.waiting.depth(), free, self.slots.num_slots)
        queued = [*self.waiting.jobs(), *self._admitting_jobs]
        ahead = self._prefill_backlog + sum(len(job.request.prompt_ids) for job in queued)
        own = self.prefill_pace.seconds_for(len(request.prompt_ids)) if ahead or slot_wait else 0.0  # alone: admit
        wait = max(slot_wait, self.prefill_pace.seconds_for(ahead)) + own
        if wait > budget:
            raise OverloadedError(
                f"model {self.name!r}: about {wait:.2f} s to the first token ({self.waiting.depth()} waiting, "
                f"{ahead} prompt tokens ahead) exceeds the time-to-first-token budget of {budget:.2f} s; retry later",
                wait,
            )
        return now + budget

    def _abort(self, job: Job) -> None:
        """Called on the event loop: mark the job; a waiting one is dropped, a running one freed, next step."""
        job.aborted = True
        if not job.abandoned.done():
            job.abandoned.cancel()
        with self._lock:
            self._lock.notify()

    def drain(self) -> None:
        """Shutdown began: refuse new requests and fail the waiting ones now (503); running ones go on
        until they finish or :meth:`close`."""
        error = UnavailableError(f"model {self.name!r} is shutting down")
        with self._lock:
            self._draining = True
            waiting = self.waiting.drain()
            self._lock.notify()
        for job in waiting:
            job.stream.fail(error)
            self.telemetry.failed(job)

    @property
    def busy(self) -> bool:
        """Whether any request runs, is preempted or waits."""
        batch = self.batch
        return bool(self._admitting_jobs or batch.running or batch.preempted or self.waiting.depth())

    def close(self) -> None:
        """Stop the engine: unfinished requests fail with UnavailableError."""
        with self._lock:
            self._stopping = True
            self._lock.notify()
        self._thread.join(timeout=30)

    # the engine thread -------------------------------------------------------------------------
    def _loop(self) -> None:
        batch = self.batch
        while True:
            with self._lock:
                self._reap_adapters()
                while not self._stopping and not batch.running and not batch.preempted and not self.waiting.depth():
                    self._lock.wait()
                    self._reap_adapters()  # an unload while idle frees its slot at once
                if self._stopping:
                    break
                expired, abandoned = self.waiting.sweep()
                urgent = self.waiting.slots_wanted(SLAClass.LATENCY_CRITICAL)
                if urgent:  # best-effort requests give their slots (class_precedence.py)
                    self.scheduler.yield_slots(urgent)
                free_slots = self.slots.num_slots - self.slots.active
                if batch.preempted:  # recomputed before new requests, latency-critical ones aside
                    free_slots = min(free_slots, urgent)
                admitted = self.waiting.admit(free_slots, sys.maxsize, batch.cost, batch.block_fit())
                self._admitting_jobs = admitted
            self._expire(expired)
            try:
                self._step(abandoned, admitted)
                self.outputs.hand_over()
            except MCPError as exc:
                self._fail_running(exc, admitted)
            except Exception as exc:  # a bug must not kill the engine thread silently
                log.exception("generation step failed")
                self._fail_running(UnavailableError(f"generation failed: {type(exc).__name__}"), admitted)
            self._admitting_jobs = []
        self._shutdown()

    def _step(self, abandoned: list[Job], admitted: list[Job]) -> None:
        """One step: the scheduler plans it, the executor runs the plan, output processing applies the
        outputs (and the finished sequences' slots are compacted)."""
        started = time.perf_counter()
        plan = self.scheduler.schedule(abandoned, admitted, self._step_s)
        outputs = self.executor.run(plan)
        self.executor.apply(self.outputs.apply(plan, outputs))
        self._prefill_backlog = self.batch.backlog
        self._yieldable_slots = sum(1 for sequence in self.batch.running if gives_way(sequence.job))
        self._step_s = time.perf_counter() - started
        if self._prefill_backlog:  # prompts were left waiting: the step ran at the pace a backlog drains
            self.prefill_pace.observe(plan.prompt_tokens, self._step_s)
        stats = self.blocks.stats()
        self.telemetry.observe_state(len(self.batch.running), self.waiting.depth(), stats.usage, stats.fragmentation)

    def _expire(self, expired: list[Job]) -> None:
        """Jobs that waited past their TTFT budget: 429, retry when the queue is shorter."""
        for job in expired:
            waited = time.monotonic() - job.accepted_at
            job.stream.fail(OverloadedError(f"waited {waited:.2f} s for a slot, past the TTFT budget", waited))
            self.telemetry.failed(job)

    def _finished(self, job: Job, reason: FinishReason, generated: int) -> None:
        """Every choice of ``job`` has ended (called by its text stage, before the caller sees the end)."""
        if reason != FinishReason.ABORT and job.admitted_at:
            self.queue_wait.finished(time.monotonic() - job.admitted_at)
        self.telemetry.finished(job, reason, generated)

    def _fail_running(self, error: MCPError, admitted: list[Job]) -> None:
        self.outputs.hand_over()  # what the step produced before it failed comes first
        jobs = {id(job): job for job in [*self.batch.release_all(), *admitted]}
        self.executor.apply(self.batch.take_ops())
        for job in jobs.values():
            job.stream.fail(error)
            self.telemetry.failed(job)

    def _shutdown(self) -> None:
        error = UnavailableError(f"model {self.name!r} is shutting down")
        with self._lock:
            waiting = self.waiting.drain()
        self._fail_running(error, [*waiting, *self.batch.preempted])
        self.batch.preempted.clear()


def weakly(method: Callable[..., None]) -> Callable[..., None]:
    """``method`` of the engine, called only while the engine lives: a job's callbacks refer to the
    job itself (a cycle, freed by a garbage collection), and holding the engine strongly there would
    keep an unloaded engine's memory until that collection."""
    ref = weakref.WeakMethod(method)

    def call(*args: object) -> None:
        bound = ref()
        if bound is not None:
            bound(*args)

    return call


class SequenceFactory:
    """A choice's sequence state for the step scheduler. A callable of its own, not a bound method of
    the engine: the scheduler holding the engine would make a reference cycle, and an unloaded
    engine would then wait for a full garbage collection to give its memory back."""

    def __init__(self, info: LLMInfo, grammars: Grammars) -> None:
        self.info = info
        self.grammars = grammars

    def __call__(self, job: Job, index: int) -> SequenceState:
        params = job.request.params
        token_stop = TokenStop(params, self.info.eos_token_ids, job.max_tokens)
        return SequenceState(
            job=job,
            index=index,
            sampler=Sampler(params, job.request.prompt_ids, self.info.vocab_size, index, token_stop.stop_ids),
            token_stop=token_stop,
            grammar=self.grammars.matcher(job.request.constraint) if job.request.constraint else None,
        )


def build_engine(name: str, folder: Path, config: EngineConfig | None = None) -> Engine:
    """An engine for the converted model in ``folder`` (see ``ir/llm_convert.py``)."""
    config = config or EngineConfig()
    info = load_llm_info(folder)
    tokenizer = TextTokenizer(folder)
    max_len = min(config.max_model_len, info.context_length)
    lora = LoraLayout(config.max_loras, config.max_lora_rank) if config.max_loras else None
    decoder = OnnxDecoder(folder, info, config.max_num_seqs, max_len, config.threads, lora=lora)
    return Engine(name, decoder, tokenizer, info, config)
