"""The generation engine: continuous batching of token generation on one decoder.

One thread runs the steps; callers submit from an event loop and read a :class:`GenerationStream`.
A step: drop aborted requests (their KV slots free at once), resume preempted requests, admit
waiting requests in SLA-class fair order while slots and KV blocks are free (each takes its slots
and starts prefilling), decode one token for every decoding sequence in one batched run (sample,
check the token stop conditions, hand each request its new tokens), then spend the rest of the step's token
budget on prompt chunks, oldest prompt first (``generation/prefill.py``): a prompt whose last chunk
ran samples its first token and decodes from the next step on. Finished sequences leave the batch
before the next step. Detokenizing, stop strings and logprobs run on the caller's event loop while
the next step runs (``generation/text_stage.py``); a choice ended there by a stop string leaves the
batch at the next step, its extra token dropped.

KV memory is counted in 16-token blocks from one pool (``EngineConfig.kv_cache_mb``, or the
contract's memory budget): a sequence holds the blocks its tokens fill, never a ``max_model_len``
reservation, and takes one more only when its last block is full. The decoder's slots reserve
address space only (their pages are committed when written and given back when a slot is vacated).
When the pool runs dry while sequences grow, the most recently admitted request is preempted: its
blocks and slots are freed and it is recomputed before any new request is admitted (its prompt
prefilled again, then its tokens so far fed again by decode steps, so its keys and values are the ones
it had); its stream just pauses.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.errors import MCPError, OverloadedError, UnavailableError
from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.grammar import Grammars
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.kv_blocks import DEFAULT_BLOCK_SIZE, KVBlockPool, pool_blocks
from mcp2026ai.generation.kv_slots import SlotTable
from mcp2026ai.generation.prefill import PrefillTask, plan_chunks, prefill_budget
from mcp2026ai.generation.prefix_cache import PrefixCache
from mcp2026ai.generation.pressure import PrefillPace, QueueWait, late_prompts
from mcp2026ai.generation.prompt_scoring import prompt_token_logprobs
from mcp2026ai.generation.request_checks import check_request
from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.scheduler import WaitingQueue
from mcp2026ai.generation.speculative import Speculation, prompt_lookup, verify_drafts
from mcp2026ai.generation.stopping import TokenStop
from mcp2026ai.generation.stream import GenerationStream, Made, deliver_all
from mcp2026ai.generation.telemetry import EngineTelemetry
from mcp2026ai.generation.text_stage import TextStage, TokenStep
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import FinishReason, GenerationRequest
from mcp2026ai.ir.llm_info import LLMInfo, load_llm_info
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
        self._preempted: deque[Job] = deque()
        self.waiting: WaitingQueue[Job] = WaitingQueue(config.classes, config.retry_after_s)
        self.telemetry = EngineTelemetry(name)
        self.queue_wait = QueueWait()
        """Measured slot turnover: the wait a new request would face (429 beyond its TTFT budget)."""
        self.prefill_pace = PrefillPace()
        self._prefill_backlog = 0
        self._step_s = 0.0
        """Prompt tokens still to run into the slots being filled (set at the end of each step)."""
        capacity = int(config.prefix_cache_mb * (1 << 20))
        self.prefix_cache = PrefixCache(capacity) if capacity > 0 else None
        self.grammars = Grammars(tokenizer.path, info.vocab_size, info.eos_token_ids)
        self.speculation = Speculation(config.speculative_tokens)
        self._running: dict[Hashable, SequenceState] = {}
        """Every sequence holding a slot: decoding, or prefilling (see ``_prefilling``)."""
        self._prefilling: list[PrefillTask[SequenceState]] = []
        """Prompts (and recomputed histories) being run into their slots, oldest first, chunk by chunk."""
        self._lock = threading.Condition()
        self._stopping = False
        self._draining = False
        self._admitting_jobs: list[Job] = []
        """Jobs taken from the waiting queue for the step in progress (neither waiting nor running yet)."""
        self._outbox: list[tuple[GenerationStream, Made]] = []
        """This step's deliveries, handed to the event loops together at its end."""
        self.prefill_pace.probe(lambda tokens: decoder.prefill(0, tokens), self.max_len - 1)
        decoder.release(0)
        decoder.pad_lone_rows = config.batch_invariance == BatchInvariance.ON or (
            config.batch_invariance == BatchInvariance.AUTO and not decoder.lone_row_matches_batched()
        )
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
        stream = GenerationStream(request.request_id, len(request.prompt_ids), loop, self.config.stream_buffer_deltas)
        job = Job(
            request=request,
            stream=stream,
            max_tokens=max_tokens,
            abandoned=loop.create_future(),
            accepted_at=time.monotonic(),
            span=self.telemetry.start_span(request),
            text=TextStage(
                self.tokenizer, request.params, lambda reason, generated: self._finished(job, reason, generated)
            ),
        )
        stream.on_abort = lambda: self._abort(job)
        with self._lock:
            try:
                if self._stopping or self._draining:
                    raise UnavailableError(f"model {self.name!r} is shutting down")
                job.deadline = self._admission_deadline(request, job.accepted_at)
                self.waiting.push(job, request.sla_class, request.params.n, job.abandoned, job.deadline)
            except MCPError:
                self.telemetry.rejected(job)
                raise
            self._lock.notify()
        return stream

    def _admission_deadline(self, request: GenerationRequest, now: float) -> float | None:
        """Called under the lock: the latest time ``request`` may still wait (None: no TTFT budget);
        OverloadedError at once when the queue ahead already takes longer than the budget."""
        budget = request.ttft_budget_s
        if budget is None:
            return None
        free = self.slots.num_slots - self.slots.active - len(self._preempted)
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
        return bool(self._admitting_jobs or self._running or self._preempted or self.waiting.depth())

    def close(self) -> None:
        """Stop the engine: unfinished requests fail with UnavailableError."""
        with self._lock:
            self._stopping = True
            self._lock.notify()
        self._thread.join(timeout=30)

    # the engine thread -------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._stopping and not self._running and not self._preempted and not self.waiting.depth():
                    self._lock.wait()
                if self._stopping:
                    break
                expired, abandoned = self.waiting.sweep()
                free_slots = 0 if self._preempted else self.slots.num_slots - self.slots.active
                admitted = self.waiting.admit(free_slots, sys.maxsize, self._cost, self._block_fit())
                self._admitting_jobs = admitted
            self._expire(expired)
            try:
                self._step(abandoned, admitted)
                self._hand_over()
            except MCPError as exc:
                self._fail_running(exc, admitted)
            except Exception as exc:  # a bug must not kill the engine thread silently
                log.exception("generation step failed")
                self._fail_running(UnavailableError(f"generation failed: {type(exc).__name__}"), admitted)
            self._admitting_jobs = []
        self._shutdown()

    def _expire(self, expired: list[Job]) -> None:
        """Jobs that waited past their TTFT budget: 429, retry when the queue is shorter."""
        for job in expired:
            waited = time.monotonic() - job.accepted_at
            job.stream.fail(OverloadedError(f"waited {waited:.2f} s for a slot, past the TTFT budget", waited))
            self.telemetry.failed(job)

    def _refuse_late_prompts(self) -> None:
        """Prompts that cannot reach their first token by their deadline at the measured prefill pace
        (oldest first, as they run): 429 now, their slots freed, rather than a first token later than the
        contract promises. A burst that arrived before the pace was measured is held to it this way."""
        late, retry = late_prompts(self._prefilling, self.prefill_pace, lambda s: s.job.deadline, self._step_s)
        for job in {id(task.sequence.job): task.sequence.job for task in late}.values():
            for sequence in job.sequences:
                if sequence in self._running:
                    self._release(sequence)
            job.stream.fail(
                OverloadedError("the prompts ahead leave no time for a first token in the TTFT budget", retry)
            )
            self.telemetry.failed(job)
        if late:
            self._prefilling = [task for task in self._prefilling if task.sequence in self._running]

    @staticmethod
    def _cost(job: Job) -> tuple[int, int]:
        return job.request.params.n, len(job.request.prompt_ids)

    def _watermark(self) -> int:
        """Blocks kept free at admission so running sequences can grow without preempting at once."""
        return max(1, self.blocks.num_blocks // 100)

    def _block_fit(self) -> Any:
        """Admission's KV test for one step: each admitted job takes its prompt's blocks (per choice)."""
        remaining = self.blocks.available_blocks - self._watermark()

        def fits(job: Job) -> bool:
            nonlocal remaining
            needed = job.request.params.n * self.blocks.blocks_for(len(job.request.prompt_ids) + 1)
            if needed > remaining:
                return False
            remaining -= needed
            return True

        return fits

    def _step(self, abandoned: list[Job], admitted: list[Job]) -> None:
        started = time.perf_counter()
        for job in abandoned:
            self._finish_job(job, FinishReason.ABORT)
        self._reap_aborted()
        self._drop_stopped_by_text()
        self._resume_preempted()
        for job in admitted:
            if job.aborted:
                self._finish_job(job, FinishReason.ABORT)
            else:
                self._admit(job)
        decoded = self._decode() if self._running else 0
        self._release_finished()
        self._prefilling = [task for task in self._prefilling if task.sequence in self._running and task.remaining]
        self._refuse_late_prompts()
        budget = prefill_budget(self.config.step_tokens, decoded)
        chunks = plan_chunks(self._prefilling, budget, self.config.prefill_chunk_tokens)
        for task, size in chunks:
            self._prefill_chunk(task, size)
        self._release_finished()
        self._prefill_backlog = sum(task.remaining for task in self._prefilling)
        self._step_s = time.perf_counter() - started
        if self._prefill_backlog:  # prompts were left waiting: the step ran at the pace a backlog drains
            self.prefill_pace.observe(sum(size for _, size in chunks), self._step_s)
        stats = self.blocks.stats()
        self.telemetry.observe_state(len(self._running), self.waiting.depth(), stats.usage, stats.fragmentation)

    def _admit(self, job: Job) -> None:
        """Give the job's choices their slots and blocks; its prompt is prefilled chunk by chunk."""
        prompt = job.request.prompt_ids
        job.admitted_at = time.monotonic()
        for index in range(job.request.params.n):
            sequence = self._new_sequence(job, index)
            job.sequences.append(sequence)
            self._hold_slot(sequence, prompt)
        first = job.sequences[0]
        scored = job.request.params.prompt_logprobs
        if scored is not None:
            self._prefill_scored(job, prompt, scored)
            return
        cached = self._restore_prefix(first, prompt)
        job.stream.prefilled(cached, None)
        if self.prefix_cache:
            self.telemetry.prefix_cache(cached, self.prefix_cache.hit_rate, len(prompt))
        # n choices share the prompt's KV: prefilled once, then copied
        self._prefilling.append(PrefillTask(first, list(prompt), cached, job.sequences[1:]))

    def _prefill_scored(self, job: Job, prompt: Sequence[int], scored: int) -> None:
        """A prompt whose tokens' logprobs are asked for (``echo``): the whole prompt in one run with every
        position's logits (neither chunked nor from the prefix cache), then its choices start at once."""
        first = job.sequences[0]
        slot = self.slots.slot_of(first)
        rows = self.decoder.prompt_logits(slot, prompt)
        job.stream.prefilled(0, prompt_token_logprobs(rows, prompt, scored))
        self.telemetry.prompt_tokens(len(prompt))
        now = time.monotonic()
        for choice in job.sequences:
            if choice is not first:
                self.decoder.move(slot, self.slots.slot_of(choice), len(prompt))
            self.slots.grow(choice, len(prompt))
            choice.prefilling = False
            self._accept_token(choice, rows[-1], now)
        self._publish(job)

    def _hold_slot(self, sequence: SequenceState, tokens: Sequence[int]) -> None:
        sequence.prefilling = True
        self.slots.allocate(sequence, 0)
        self.blocks.allocate(sequence, tokens)
        self._running[sequence] = sequence

    def _restore_prefix(self, sequence: SequenceState, tokens: Sequence[int]) -> int:
        """Copy the cached KV of the longest known prefix of ``tokens`` into the sequence's slot."""
        if not self.prefix_cache:
            return 0
        cached = self.prefix_cache.restore(tokens, self.slots.slot_of(sequence), self.decoder)
        self.slots.grow(sequence, cached)
        return cached

    def _prefill_chunk(self, task: PrefillTask[SequenceState], size: int) -> None:
        """Run the task's next ``size`` tokens into its slot; when that completes it, the choices start."""
        sequence = task.sequence
        slot = self.slots.slot_of(sequence)
        end = task.done + size
        logits = self.decoder.prefill(slot, task.tokens[:end], task.done)
        self.slots.grow(sequence, size)
        task.done = end
        if task.first_token:
            self.telemetry.prompt_tokens(size)
        if task.remaining:
            return
        if self.prefix_cache and task.first_token:
            self.prefix_cache.remember(task.tokens, slot, self.decoder)
        for fork in task.forks:
            self.decoder.move(slot, self.slots.slot_of(fork), end)
            self.slots.grow(fork, end)
        choices = [sequence, *task.forks]
        for choice in choices:
            choice.prefilling = False
        if task.first_token:
            now = time.monotonic()
            for choice in choices:
                self._accept_token(choice, logits, now)
            self._publish(sequence.job)

    def _new_sequence(self, job: Job, index: int) -> SequenceState:
        params = job.request.params
        token_stop = TokenStop(params, self.info.eos_token_ids, job.max_tokens)
        return SequenceState(
            job=job,
            index=index,
            sampler=Sampler(params, job.request.prompt_ids, self.info.vocab_size, index, token_stop.stop_ids),
            token_stop=token_stop,
            grammar=self.grammars.matcher(job.request.constraint) if job.request.constraint else None,
        )

    def _decode(self) -> int:
        """One step of every decoding sequence: one token each in one batched run, or, for a sequence
        with a prompt-lookup draft, its own verification run; how many sequences stepped."""
        self._make_room()
        decoding = [s for s in self._running.values() if not s.prefilling]
        if not decoding:
            return 0
        drafts = self._drafts(decoding)
        order: list[SequenceState] = self.slots.order()  # type: ignore[assignment]
        plain = [index for index, s in enumerate(order) if not s.prefilling and s not in drafts]
        if plain:
            self._decode_rows(order[: 1 + max(plain)], drafts)
        for sequence, draft in drafts.items():
            self._verify(sequence, draft)
        return len(decoding)

    def _decode_rows(self, order: list[SequenceState], skip: dict[SequenceState, list[int]]) -> None:
        """Decode slots ``0 .. len(order)-1``; prefilling sequences and those in ``skip`` (verified on
        their own) get a throwaway row, written past their KV."""
        tokens, lengths, replayed = [], [], set()
        for row, sequence in enumerate(order):
            if sequence.prefilling or sequence in skip:
                tokens.append(0)
                lengths.append(self.slots.length_of(sequence) + 1)
                continue
            token = sequence.last_token
            if sequence.replay:  # a resumed sequence's sampled token: its next one is known already
                token = sequence.replay.popleft()
                replayed.add(row)
            self.slots.grow(sequence)
            if not self.blocks.append(sequence, token):  # _make_room left a block for each
                raise UnavailableError("KV cache out of blocks after making room (a bug): failing the batch")
            tokens.append(token)
            lengths.append(self.slots.length_of(sequence))
        if self.decoder.pad_lone_rows and len(tokens) == 1:  # a throwaway second row: the batched kernels
            tokens.append(0)
            lengths.append(self.slots.length_of(self.slots.order()[1]) + 1 if self.slots.active > 1 else 1)
        started = time.perf_counter()
        logits = self.decoder.decode(tokens, lengths)
        self.speculation.gate.observe_decode(len(order), time.perf_counter() - started)
        now = time.monotonic()
        touched: dict[int, Job] = {}
        for row, sequence in enumerate(order):
            if sequence.prefilling or sequence in skip or row in replayed:
                continue
            self.telemetry.inter_token(now - sequence.last_token_at)
            self._accept_token(sequence, logits[row], now)
            touched[id(sequence.job)] = sequence.job
        for job in touched.values():
            self._publish(job)

    def _drafts(self, decoding: list[SequenceState]) -> dict[SequenceState, list[int]]:
        """Prompt-lookup drafts of the sequences that get one this step (speculation on, the decoder
        returns several rows of logits, room in the context and the KV pool)."""
        if not self.speculative_tokens or not self.decoder.multi_row_logits:
            return {}
        spare = self.blocks.available_blocks - len(decoding)  # _make_room's reserve for the plain rows
        drafts = {}
        for sequence in decoding:
            if sequence.grammar is not None or sequence.replay:
                continue  # a constrained sequence never speculates: its drafts would need the matcher's rollback
            draft = self._draft(sequence)
            table = self.blocks.table(sequence)
            extra = self.blocks.blocks_for(table.num_tokens + 1 + len(draft)) - len(table.blocks)
            if draft and extra <= spare:
                drafts[sequence] = draft
                spare -= extra
        return drafts

    def _draft(self, sequence: SequenceState) -> list[int]:
        """Up to ``speculative_tokens`` drafted tokens; none while backing off after misses."""
        if not self.speculation.wants_draft(sequence.drafting):
            return []
        room = min(
            self.speculative_tokens,
            self.max_len - self.slots.length_of(sequence) - 1,
            sequence.job.max_tokens - sequence.generated - 1,
        )
        return prompt_lookup([*sequence.job.request.prompt_ids, *sequence.history], room) if room > 0 else []

    def _verify(self, sequence: SequenceState, draft: list[int]) -> None:
        """Run the last token and the draft in one decoder run; the sequence chooses its tokens from the
        rows as it would one at a time (``verify_drafts``). A step that accepts nothing still yields one."""
        length = self.slots.length_of(sequence)
        fed = [sequence.last_token, *draft]
        started = time.perf_counter()
        logits = self.decoder.verify(self.slots.slot_of(sequence), fed, length + len(fed))
        self.speculation.gate.observe_verify(time.perf_counter() - started)
        now = time.monotonic()

        def choose(row: int) -> int | None:
            self.telemetry.inter_token(now - sequence.last_token_at)
            self._accept_token(sequence, logits[row], now)
            return sequence.last_token if sequence.finished is None else None

        accepted = verify_drafts(draft, choose)
        for token in fed[: 1 + accepted]:  # the KV that counts: the last token and the accepted drafts
            self.slots.grow(sequence)
            self.blocks.append(sequence, token)
        self.telemetry.speculated(len(draft), accepted)
        self.speculation.verified(sequence.drafting, accepted)
        self._publish(sequence.job)

    def _accept_token(self, sequence: SequenceState, logits: np.ndarray, now: float) -> None:
        """Sample the sequence's next token and check the token stops; its text comes later (text_stage.py)."""
        grammar = sequence.grammar
        token, _ = sequence.sampler.sample(logits, grammar.allowed() if grammar else None, with_logprob=False)
        if grammar is not None:
            grammar.accept(token)
        sequence.history.append(token)
        job = sequence.job
        if job.first_token_at is None:
            job.first_token_at = now
            self.telemetry.first_token(now - job.accepted_at)
        sequence.generated += 1
        sequence.last_token = token
        sequence.last_token_at = now
        in_text = not sequence.token_stop.is_stop_token(token)
        if not in_text or (grammar is not None and grammar.finished):
            sequence.finished = FinishReason.STOP
        elif sequence.token_stop.reached_limit(sequence.generated):
            sequence.finished = FinishReason.LENGTH
        row = logits.copy() if in_text and job.request.params.logprobs is not None else None  # the buffer is reused
        job.steps.append(TokenStep(sequence.index, token, in_text, row, sequence.finished))

    def _publish(self, job: Job) -> None:
        """Queue the job's new tokens for its text stage, which runs on the stream's event loop (handed
        over once per step: :meth:`_hand_over`)."""
        steps, job.steps = job.steps, []
        if steps:
            self._outbox.append((job.stream, lambda: job.text.assemble(steps)))

    def _hand_over(self) -> None:
        made, self._outbox = self._outbox, []
        deliver_all(made)

    def _finished(self, job: Job, reason: FinishReason, generated: int) -> None:
        """Every choice of ``job`` has ended (called by its text stage, before the caller sees the end)."""
        if reason != FinishReason.ABORT and job.admitted_at:
            self.queue_wait.finished(time.monotonic() - job.admitted_at)
        self.telemetry.finished(job, reason, generated)

    def _drop_stopped_by_text(self) -> None:
        """Choices that the text stage ended by a stop string (a step late) leave the batch now."""
        for sequence in self._running.values():
            if sequence.finished is None and sequence.index in sequence.job.text.stopped:
                sequence.finished = FinishReason.STOP
        self._release_finished()

    def _release_finished(self) -> None:
        for sequence in [s for s in self._running.values() if s.finished is not None]:
            self._release(sequence)

    def _release(self, sequence: SequenceState, preempted: bool = False) -> None:
        del self._running[sequence]
        if preempted:
            self.blocks.preempt(sequence)
        else:
            self.blocks.free(sequence)
        move = self.slots.free(sequence)
        if move is not None:
            self.decoder.move(move.source, move.target, move.length)
        self.decoder.release(self.slots.active)  # the slot vacated at the end gives its memory back

    # KV blocks: preemption and recompute -------------------------------------------------------
    def _make_room(self) -> None:
        """Preempt the most recently admitted requests until every running sequence can take its next token."""
        while self._running:
            needed = sum(
                1
                for s in self._running.values()
                if not s.prefilling and self.blocks.table(s).num_tokens % self.blocks.block_size == 0
            )
            if needed <= self.blocks.available_blocks:
                return
            self._preempt(max({id(s.job): s.job for s in self._running.values()}.values(), key=lambda j: j.admitted_at))

    def _preempt(self, job: Job) -> None:
        for sequence in job.sequences:
            if sequence in self._running:
                self._release(sequence, preempted=True)
        self._preempted.append(job)
        self.telemetry.preempted()

    def _resume_preempted(self) -> None:
        """Recompute preempted requests, oldest first, while slots and blocks allow (before new ones)."""
        while self._preempted:
            job = self._preempted[0]
            if job.aborted:
                self._preempted.popleft()
                self._finish_job(job, FinishReason.ABORT)
                continue
            waiting = [s for s in job.sequences if s.finished is None and s.index not in job.text.stopped]
            if not waiting:  # ended by stop strings while preempted
                self._preempted.popleft()
                continue
            histories = [[*job.request.prompt_ids, *s.history[:-1]] for s in waiting]
            needed = sum(self.blocks.blocks_for(len(h) + 1) for h in histories)
            prompt = job.request.prompt_ids
            room = self.slots.num_slots - self.slots.active
            reserve = self._watermark() if self._running else 0  # alone, it always fits (see submit)
            if len(waiting) > room or needed + reserve > self.blocks.available_blocks:
                return
            self._preempted.popleft()
            job.admitted_at = time.monotonic()
            for sequence in waiting:
                # the prompt is prefilled again and the sampled tokens replayed by decode steps, as they ran
                sequence.replay = deque(sequence.history[:-1])
                self._hold_slot(sequence, prompt)
                cached = self._restore_prefix(sequence, prompt)
                # preempted before its first token (still prefilling): it samples one when done
                self._prefilling.append(PrefillTask(sequence, prompt, cached, first_token=not sequence.history))

    def _reap_aborted(self) -> None:
        for job in {id(s.job): s.job for s in self._running.values() if s.job.aborted}.values():
            for sequence in job.sequences:
                if sequence in self._running:
                    self._release(sequence)
            self._finish_job(job, FinishReason.ABORT)

    def _finish_job(self, job: Job, reason: FinishReason) -> None:
        if not job.sequences:
            job.sequences = [self._new_sequence(job, index) for index in range(job.request.params.n)]
        for sequence in job.sequences:
            if sequence.finished is None:
                sequence.finished = reason
                job.steps.append(TokenStep(sequence.index, finish=reason))
        self._publish(job)

    def _fail_running(self, error: MCPError, admitted: list[Job]) -> None:
        self._hand_over()  # what the step produced before it failed comes first
        jobs = {id(s.job): s.job for s in self._running.values()} | {id(job): job for job in admitted}
        for sequence in list(self._running.values()):
            self._release(sequence)
        self._prefilling.clear()
        for job in jobs.values():
            job.stream.fail(error)
            self.telemetry.failed(job)

    def _shutdown(self) -> None:
        error = UnavailableError(f"model {self.name!r} is shutting down")
        with self._lock:
            waiting = self.waiting.drain()
        self._fail_running(error, [*waiting, *self._preempted])
        self._preempted.clear()


def build_engine(name: str, folder: Path, config: EngineConfig | None = None) -> Engine:
    """An engine for the converted model in ``folder`` (see ``ir/llm_convert.py``)."""
    config = config or EngineConfig()
    info = load_llm_info(folder)
    tokenizer = TextTokenizer(folder)
    max_len = min(config.max_model_len, info.context_length)
    decoder = OnnxDecoder(folder, info, config.max_num_seqs, max_len, config.threads)
    return Engine(name, decoder, tokenizer, info, config)
