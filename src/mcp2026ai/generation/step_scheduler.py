"""The step scheduler: what one engine step runs, as a frozen :class:`StepPlan` (vLLM v1's
``Scheduler.schedule``, adapted to this decoder).

Given the requests the waiting queue admitted (``scheduler.py``: SLA-class fair order while slots and
KV blocks are free) and those whose callers left, :meth:`StepScheduler.schedule` decides, in order:
aborted requests leave (their slots free at once); choices that the text stage ended by a stop
string leave; preempted requests are recomputed, oldest first, while slots and blocks allow; the
admitted requests take their slots (a prompt known to the prefix cache starts from its cached
blocks); the most recently admitted requests are preempted until every decoding sequence can grow
by a token; prompts that cannot reach their first token within their TTFT budget are refused;
every decoding sequence gets a row of the decode run, or, with a prompt-lookup draft, a
verification run of its own; and the rest of the step's token budget goes to prompt chunks, oldest
prompt first (``prefill.py``). Latency-critical prompts are filled first, and while one is, best-effort
prompt chunks wait and best-effort decoding sequences sit the step out (``class_precedence.py``).

Scheduling does the bookkeeping of what it plans (slots, blocks, chunk progress) but runs nothing
and touches no stream: the executor runs the plan, output processing samples and delivers.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from mcp2026ai.errors import UnavailableError
from mcp2026ai.generation.class_precedence import Precedence, fill_order, gives_way, precedence
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.prefill import PrefillTask, plan_chunks, prefill_budget
from mcp2026ai.generation.prefix_cache import PrefixCache
from mcp2026ai.generation.pressure import PrefillPace, late_prompts
from mcp2026ai.generation.running_batch import RunningBatch
from mcp2026ai.generation.speculative import Speculation, prompt_lookup
from mcp2026ai.generation.step_plan import Admission, DecodeBatch, DraftCheck, PromptChunk, ScoredPrompt, StepPlan
from mcp2026ai.generation.types import FinishReason
from mcp2026ai.ir.lora_graph import NO_ADAPTER

NewSequence = Callable[[Job, int], SequenceState]
"""Makes choice ``index`` of a job (its sampler, stops and grammar state)."""


class StepScheduler:
    """Decides each step of one engine; owns nothing but the decisions (state lives in the batch)."""

    def __init__(
        self,
        batch: RunningBatch,
        config: EngineConfig,
        speculation: Speculation,
        prefill_pace: PrefillPace,
        new_sequence: NewSequence,
        prefix_cache: PrefixCache | None = None,
        multi_row_logits: bool = True,
        pad_lone_rows: bool = False,
    ) -> None:
        self.batch = batch
        self.config = config
        self.speculation = speculation
        self.prefill_pace = prefill_pace
        self.new_sequence = new_sequence
        self.prefix_cache = prefix_cache
        self.multi_row_logits = multi_row_logits
        self.pad_lone_rows = pad_lone_rows
        """Give a decode run of one row a throwaway second (docs/determinism.md: the host's kernels)."""
        self.class_precedence = True
        """Best-effort work gives way to latency-critical prompts (``class_precedence.py``); False: every
        class shares each step alike (kept switchable for benchmarks/llm/batch_interference.py)."""
        self._yielded: list[Job] = []
        """Requests preempted by :meth:`yield_slots` since the last plan (they go in its ``preempted``)."""
        self.max_len = batch.slots.max_len

    def yield_slots(self, urgent: int) -> None:
        """Before admission: preempt the most recently admitted best-effort requests until ``urgent``
        slots (the choices of the latency-critical requests waiting) are free. They are recomputed
        exactly, before any other new admission, once slots free up (docs/determinism.md)."""
        if self.class_precedence:
            self._yielded += self.batch.yield_slots(urgent, gives_way)

    def schedule(
        self, abandoned: list[Job], admitted: list[Job], step_s: float = 0.0, now: float | None = None
    ) -> StepPlan:
        """The next step: ``abandoned`` left the waiting queue (their callers gone), ``admitted`` take
        their slots now; ``step_s`` is the last step's time (the refusal of late prompts leaves it to
        spare); ``now`` (monotonic seconds) marks the admissions, which preemption picks by."""
        batch, now = self.batch, time.monotonic() if now is None else now
        aborted = [*abandoned, *self._reap_aborted()]
        self._drop_stopped_by_text()
        scoring: list[Job] = []
        aborted += self._resume_preempted(scoring, now, [job for job in admitted if not job.aborted])
        admissions = []
        for job in admitted:
            if job.aborted:
                aborted.append(job)
            elif job.request.params.prompt_logprobs is not None:
                self._hold_all(job, now)
                scoring.append(job)
            else:
                admissions.append(self._admit(job, now))
        preempted, self._yielded = [*self._yielded, *(batch.make_room() if batch.running else [])], []
        if self.class_precedence:
            fill_order(batch.prefilling)
        refused, retry = self._refuse_late_prompts(step_s)
        decoding = batch.decoding()
        yielded = precedence(batch.prefilling, decoding) if self.class_precedence else None
        paused = frozenset(yielded.paused) if yielded else frozenset()
        decoding = [sequence for sequence in decoding if sequence not in paused] if paused else decoding
        drafts = self._drafts(decoding)
        checks = tuple(self._check(sequence, draft) for sequence, draft in drafts.items()) if drafts else ()
        rows = self._decode_batch(drafts, paused)
        scored = tuple(self._scored(job) for job in scoring if job.sequences[0] in batch.running) if scoring else ()
        chunks = self._chunks(len(decoding), yielded) if batch.prefilling else ()
        return StepPlan(
            kv_ops=batch.take_ops(),
            decode=rows,
            verify=checks,
            scored=scored,
            chunks=chunks,
            admitted=tuple(admissions),
            aborted=tuple(aborted),
            refused=tuple(refused),
            retry_after_s=retry,
            preempted=tuple(preempted),
            decoding=len(decoding),
            precedence=yielded,
        )

    # admission and resumption ------------------------------------------------------------------
    def _hold_all(self, job: Job, now: float) -> None:
        """Give every choice of a new job its slot and its prompt's blocks."""
        job.admitted_at = now
        if not job.sequences:
            job.sequences = [self.new_sequence(job, index) for index in range(job.request.params.n)]
        for sequence in job.sequences:
            self.batch.hold(sequence, job.request.prompt_ids)

    def _admit(self, job: Job, now: float) -> Admission:
        """A new prompt: prefilled once into its first choice's slot (from the prefix cache's longest
        known prefix on), chunk by chunk; its other choices copy the KV when it completes."""
        self._hold_all(job, now)
        prompt = job.request.prompt_ids
        first = job.sequences[0]
        cached = self._restore_prefix(first, prompt)
        self.batch.prefilling.append(PrefillTask(first, list(prompt), cached, job.sequences[1:]))
        return Admission(job, cached, self.prefix_cache.hit_rate if self.prefix_cache else None)

    def _restore_prefix(self, sequence: SequenceState, tokens: list[int]) -> int:
        if not self.prefix_cache:
            return 0
        blocks = self.prefix_cache.lookup(tokens, sequence.job.prefix_root)
        cached = len(blocks) * self.prefix_cache.block_size
        self.batch.restore(sequence, blocks, cached)
        return cached

    def _resume_preempted(self, scoring: list[Job], now: float, admitted: list[Job]) -> list[Job]:
        """Recompute preempted requests, oldest first, while slots and blocks allow (before new ones,
        leaving what ``admitted`` takes: latency-critical requests admitted past them); the aborted
        ones among them."""
        batch, aborted = self.batch, []
        held_slots = sum(job.request.params.n for job in admitted)
        held_blocks = sum(n * batch.blocks.blocks_for(tokens + 1) for n, tokens in map(batch.cost, admitted))
        while batch.preempted:
            job = batch.preempted[0]
            if job.aborted:
                aborted.append(batch.preempted.popleft())
                continue
            waiting = [s for s in job.sequences if s.finished is None and s.index not in job.text.stopped]
            if not waiting:  # ended by stop strings while preempted
                batch.preempted.popleft()
                continue
            histories = [[*job.request.prompt_ids, *s.history[:-1]] for s in waiting]
            needed = sum(batch.blocks.blocks_for(len(h) + 1) for h in histories)
            room = batch.slots.num_slots - batch.slots.active - held_slots
            reserve = (batch.watermark() if batch.running else 0) + held_blocks  # alone, it always fits
            if len(waiting) > room or needed + reserve > batch.blocks.available_blocks:
                break
            batch.preempted.popleft()
            if job.request.params.prompt_logprobs is not None and not any(s.history for s in job.sequences):
                self._hold_all(job, now)  # preempted before its scored prompt ran: it runs whole again
                scoring.append(job)
                continue
            job.admitted_at = now
            prompt = job.request.prompt_ids
            for sequence in waiting:
                # the prompt is prefilled again and the sampled tokens replayed by decode steps, as they ran
                sequence.replay = deque(sequence.history[:-1])
                batch.hold(sequence, prompt)
                cached = self._restore_prefix(sequence, prompt)
                # preempted before its first token (still prefilling): it samples one when done
                batch.prefilling.append(PrefillTask(sequence, prompt, cached, first_token=not sequence.history))
        return aborted

    # leaving ----------------------------------------------------------------------------------
    def _reap_aborted(self) -> list[Job]:
        jobs = {id(s.job): s.job for s in self.batch.running.values() if s.job.aborted}
        for job in jobs.values():
            self.batch.release_job(job)
        return list(jobs.values())

    def _drop_stopped_by_text(self) -> None:
        """Choices that the text stage ended by a stop string (a step late) leave the batch now."""
        for sequence in self.batch.running.values():
            if sequence.finished is None and sequence.index in sequence.job.text.stopped:
                sequence.finished = FinishReason.STOP
        self.batch.release_finished()

    def _refuse_late_prompts(self, step_s: float) -> tuple[list[Job], float]:
        """Prompts that cannot reach their first token by their deadline at the measured prefill pace
        (oldest first, as they run): refused now, their slots freed, rather than a first token later
        than the contract promises. A burst that arrived before the pace was measured is held to it."""
        batch = self.batch
        if not batch.prefilling:
            return [], 0.0
        batch.drop_gone_tasks()
        late, retry = late_prompts(batch.prefilling, self.prefill_pace, lambda s: s.job.deadline, step_s)
        refused = list({id(task.sequence.job): task.sequence.job for task in late}.values())
        for job in refused:
            batch.release_job(job)
        if refused:
            batch.drop_gone_tasks()
        return refused, retry

    # what runs --------------------------------------------------------------------------------
    def _drafts(self, decoding: list[SequenceState]) -> dict[SequenceState, list[int]]:
        """Prompt-lookup drafts of the sequences that get one this step (speculation on, the decoder
        returns several rows of logits, room in the context and the KV pool)."""
        if not self.speculation.draft_tokens or not self.multi_row_logits:
            return {}
        blocks = self.batch.blocks
        spare = blocks.available_blocks - len(decoding)  # make_room's reserve for the plain rows
        drafts = {}
        for sequence in decoding:
            if sequence.grammar is not None or sequence.replay:
                continue  # a constrained sequence never speculates: its drafts would need the matcher's rollback
            draft = self._draft(sequence)
            table = blocks.table(sequence)
            extra = blocks.blocks_for(table.num_tokens + 1 + len(draft)) - len(table.blocks)
            if draft and extra <= spare:
                drafts[sequence] = draft
                spare -= extra
        return drafts

    def _draft(self, sequence: SequenceState) -> list[int]:
        """Up to ``draft_tokens`` drafted tokens; none while backing off after misses."""
        if not self.speculation.wants_draft(sequence.drafting):
            return []
        room = min(
            self.speculation.draft_tokens,
            self.max_len - self.batch.slots.length_of(sequence) - 1,
            sequence.job.max_tokens - sequence.generated - 1,
        )
        return prompt_lookup([*sequence.job.request.prompt_ids, *sequence.history], room) if room > 0 else []

    def _check(self, sequence: SequenceState, draft: list[int]) -> DraftCheck:
        """The sequence's last token and its draft in one run of its own slot; output processing keeps
        the accepted tokens' KV."""
        slots = self.batch.slots
        fed = (sequence.last_token, *draft)
        total = slots.length_of(sequence) + len(fed)
        return DraftCheck(sequence, slots.slot_of(sequence), fed, total, sequence.job.adapter_slot)

    def _decode_batch(
        self, drafts: dict[SequenceState, list[int]], paused: frozenset[SequenceState] = frozenset()
    ) -> DecodeBatch | None:
        """Rows for slots ``0 ..`` the last plain decoding sequence's: each such sequence feeds its last
        token; slots being prefilled, those verified on their own and paused ones get a throwaway row
        past their KV (a paused sequence's next row writes the same position again)."""
        slots, blocks = self.batch.slots, self.batch.blocks
        order: list[SequenceState] = slots.order()  # type: ignore[assignment]
        plain = [index for index, s in enumerate(order) if not s.prefilling and s not in drafts and s not in paused]
        if not plain:
            return None
        sequences: list[SequenceState | None] = []
        tokens, lengths, replayed, adapters = [], [], set(), []
        for row, sequence in enumerate(order[: 1 + max(plain)]):
            adapters.append(sequence.job.adapter_slot)
            if sequence.prefilling or sequence in drafts or sequence in paused:
                sequences.append(None)
                tokens.append(0)
                lengths.append(slots.length_of(sequence) + 1)
                continue
            token = sequence.last_token
            if sequence.replay:  # a resumed sequence's sampled token: its next one is known already
                token = sequence.replay.popleft()
                replayed.add(row)
            slots.grow(sequence)
            if not blocks.append(sequence, token):  # make_room left a block for each
                raise UnavailableError("KV cache out of blocks after making room (a bug): failing the batch")
            sequences.append(sequence)
            tokens.append(token)
            lengths.append(slots.length_of(sequence))
        if self.pad_lone_rows and len(tokens) == 1:  # a throwaway second row: the batched kernels
            sequences.append(None)
            tokens.append(0)
            lengths.append(slots.length_of(order[1]) + 1 if len(order) > 1 else 1)
            adapters.append(NO_ADAPTER)
        used = tuple(adapters) if any(adapter != NO_ADAPTER for adapter in adapters) else ()
        return DecodeBatch(tuple(sequences), tuple(tokens), tuple(lengths), frozenset(replayed), used)

    def _scored(self, job: Job) -> ScoredPrompt:
        """A scored prompt runs whole this step (neither chunked nor from the prefix cache); its choices
        decode from the next step on."""
        slots, prompt = self.batch.slots, job.request.prompt_ids
        for choice in job.sequences:
            slots.grow(choice, len(prompt))
            choice.prefilling = False
        forks = tuple(slots.slot_of(choice) for choice in job.sequences[1:])
        top = job.request.params.prompt_logprobs or 0
        return ScoredPrompt(job, slots.slot_of(job.sequences[0]), prompt, forks, top, job.adapter_slot)

    def _chunks(self, decoding: int, yielded: Precedence | None = None) -> tuple[PromptChunk, ...]:
        """The prompt chunks that fill the rest of the step's token budget, in fill order (oldest prompt
        first within a class); the deferred prompts' chunks wait."""
        batch = self.batch
        budget = prefill_budget(self.config.step_tokens, decoding)
        tasks = batch.prefilling
        if yielded is not None and yielded.deferred:
            tasks = [task for task in tasks if task.sequence not in yielded.deferred]
        planned = plan_chunks(tasks, budget, self.config.prefill_chunk_tokens)
        chunks = tuple(self._chunk(task, size) for task, size in planned)
        batch.drop_gone_tasks()
        return chunks

    def _chunk(self, task: PrefillTask[SequenceState], size: int) -> PromptChunk:
        slots, sequence = self.batch.slots, task.sequence
        start = task.done
        slots.grow(sequence, size)
        task.done += size
        if task.remaining:
            return PromptChunk(
                sequence,
                slots.slot_of(sequence),
                task.tokens,
                start,
                task.done,
                first_token=task.first_token,
                adapter=sequence.job.adapter_slot,
            )
        for fork in task.forks:
            slots.grow(fork, task.done)
        for choice in (sequence, *task.forks):
            choice.prefilling = False
        return PromptChunk(
            sequence,
            slots.slot_of(sequence),
            task.tokens,
            start,
            task.done,
            forks=tuple(task.forks),
            fork_slots=tuple(slots.slot_of(fork) for fork in task.forks),
            completes=True,
            first_token=task.first_token,
            remember=task.first_token and self.prefix_cache is not None,
            adapter=sequence.job.adapter_slot,
        )
