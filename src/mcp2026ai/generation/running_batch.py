"""The sequences that hold KV memory: their slots and blocks, the prompts being filled, the preempted.

KV memory is counted in 16-token blocks from one pool (``EngineConfig.kv_cache_mb``, or the
contract's memory budget): a sequence holds the blocks its tokens fill, never a ``max_model_len``
reservation, and takes one more only when its last block is full. The decoder's slots reserve
address space only and stay dense from slot 0 (``kv_slots.py``): when a sequence leaves from the
middle, the last one moves into its slot. When the pool runs dry while sequences grow, the most
recently admitted request is preempted (:meth:`RunningBatch.make_room`): its blocks and slots are
freed and it is recomputed before any new request is admitted (its prompt prefilled again, then its
sampled tokens fed again by decode steps, so its keys and values are the ones it had: docs/determinism.md).

This is bookkeeping only: every change that the decoder's KV buffers must follow (a slot move, a
vacated slot given back) is logged as a :data:`~mcp2026ai.generation.step_plan.KVOp`, which the
step's plan carries to the executor (``step_executor.py``), in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.kv_blocks import KVBlockPool
from mcp2026ai.generation.kv_slots import SlotTable
from mcp2026ai.generation.prefill import PrefillTask
from mcp2026ai.generation.step_plan import KVOp, PrefixRestore, SlotRelease


class RunningBatch:
    """Every sequence holding a slot (decoding, or prefilling), and the requests preempted meanwhile."""

    def __init__(self, slots: SlotTable, blocks: KVBlockPool) -> None:
        self.slots = slots
        self.blocks = blocks
        self.running: dict[SequenceState, SequenceState] = {}
        """Every sequence holding a slot, in admission order (a dict as an ordered set)."""
        self.prefilling: list[PrefillTask[SequenceState]] = []
        """Prompts (and recomputed histories) being run into their slots, oldest first, chunk by chunk."""
        self.preempted: deque[Job] = deque()
        """Requests whose KV was freed: recomputed, oldest first, before any new admission."""
        self._ops: list[KVOp] = []

    # the log of KV housekeeping ----------------------------------------------------------------
    def take_ops(self) -> tuple[KVOp, ...]:
        """The KV housekeeping logged since the last call, in order (for the executor)."""
        ops, self._ops = tuple(self._ops), []
        return ops

    def restore(self, sequence: SequenceState, blocks: Sequence[np.ndarray], tokens: int) -> None:
        """Copy prefix-cache blocks (``tokens`` positions) into the sequence's slot, before it prefills the rest."""
        if blocks:
            self._ops.append(PrefixRestore(self.slots.slot_of(sequence), tuple(blocks)))
            self.slots.grow(sequence, tokens)

    # holding and freeing -------------------------------------------------------------------------
    def hold(self, sequence: SequenceState, tokens: Sequence[int]) -> None:
        """Give the sequence a slot and the blocks of ``tokens``; it is prefilling until its prompt has run."""
        sequence.prefilling = True
        self.slots.allocate(sequence, 0)
        self.blocks.allocate(sequence, tokens)
        self.running[sequence] = sequence

    def release(self, sequence: SequenceState, preempted: bool = False) -> None:
        del self.running[sequence]
        if preempted:
            self.blocks.preempt(sequence)
        else:
            self.blocks.free(sequence)
        move = self.slots.free(sequence)
        if move is not None:
            self._ops.append(move)
        self._ops.append(SlotRelease(self.slots.active))  # the slot vacated at the end gives its memory back

    def release_job(self, job: Job) -> None:
        """Free every choice of ``job`` that holds a slot (aborted, or refused)."""
        for sequence in job.sequences:
            if sequence in self.running:
                self.release(sequence)

    def release_finished(self) -> None:
        for sequence in [s for s in self.running.values() if s.finished is not None]:
            self.release(sequence)

    def release_all(self) -> list[Job]:
        """Free every running sequence (the step failed, or the engine stops); the jobs they belonged to."""
        jobs = self.jobs()
        for sequence in list(self.running.values()):
            self.release(sequence)
        self.prefilling.clear()
        return jobs

    def drop_gone_tasks(self) -> None:
        """Forget prompts that completed or whose sequence no longer holds a slot."""
        self.prefilling = [task for task in self.prefilling if task.sequence in self.running and task.remaining]

    # admission and preemption ----------------------------------------------------------------------
    def watermark(self) -> int:
        """Blocks kept free at admission so running sequences can grow without preempting at once."""
        return max(1, self.blocks.num_blocks // 100)

    @staticmethod
    def cost(job: Job) -> tuple[int, int]:
        """What admitting ``job`` takes: (slots, prompt tokens)."""
        return job.request.params.n, len(job.request.prompt_ids)

    def block_fit(self) -> Callable[[Job], bool]:
        """Admission's KV test for one step: each admitted job takes its prompt's blocks (per choice)."""
        blocks = self.blocks
        remaining = blocks.available_blocks - self.watermark()

        def fits(job: Job) -> bool:
            nonlocal remaining
            needed = job.request.params.n * blocks.blocks_for(len(job.request.prompt_ids) + 1)
            if needed > remaining:
                return False
            remaining -= needed
            return True

        return fits

    def make_room(self) -> list[Job]:
        """Preempt the most recently admitted requests until every decoding sequence can take its next
        token; the preempted requests."""
        preempted = []
        while self.running:
            needed = sum(
                1
                for s in self.running.values()
                if not s.prefilling and self.blocks.table(s).num_tokens % self.blocks.block_size == 0
            )
            if needed <= self.blocks.available_blocks:
                break
            job = max(self.jobs(), key=lambda j: j.admitted_at)
            self._preempt(job)
            preempted.append(job)
        return preempted

    def yield_slots(self, needed: int, gives_way: Callable[[Job], bool]) -> list[Job]:
        """Preempt the most recently admitted requests that ``gives_way`` names until ``needed`` slots are
        free (for requests of a higher class waiting); the preempted requests."""
        preempted = []
        while self.slots.num_slots - self.slots.active < needed:
            candidates = [job for job in self.jobs() if gives_way(job)]
            if not candidates:
                break
            job = max(candidates, key=lambda j: j.admitted_at)
            self._preempt(job)
            preempted.append(job)
        return preempted

    def _preempt(self, job: Job) -> None:
        """Free the job's slots and blocks; it is recomputed, oldest first, before any new admission."""
        for sequence in job.sequences:
            if sequence in self.running:
                self.release(sequence, preempted=True)
        self.preempted.append(job)

    def grow(self, sequence: SequenceState, token: int) -> None:
        """One more token in the sequence's KV (an accepted draft: the scheduler checked the blocks)."""
        self.slots.grow(sequence)
        self.blocks.append(sequence, token)

    # views ----------------------------------------------------------------------------------------
    def jobs(self) -> list[Job]:
        """The requests with a sequence holding a slot, once each."""
        return list({id(s.job): s.job for s in self.running.values()}.values())

    def decoding(self) -> list[SequenceState]:
        return [s for s in self.running.values() if not s.prefilling]

    @property
    def backlog(self) -> int:
        """Prompt tokens still to run into the slots being filled."""
        return sum(task.remaining for task in self.prefilling)
