"""Output processing: a step's raw outputs applied to its plan (vLLM v1's ``update_from_output``).

For each row of logits the plan said would be read: the sequence samples its token (grammar mask
first, its own generator), the token stops are checked (stop token, grammar end, length), and the
token goes to its request's batch of :class:`~mcp2026ai.generation.text_stage.TokenStep`. A
verification keeps its drafts for as long as each is the token the sequence chooses there, plus the
next (``speculative.verify_drafts``), and only the kept tokens' KV counts. A scored prompt's rows give
its prompt logprobs and its first token; a prompt's completing chunk gives every choice's first
token. Requests the plan ended get their ends: aborted ones finish, refused ones fail with 429.

Every request that produced something this step is queued once for hand-over: its text is made on
its stream's event loop (``text_stage.py``) while the next step runs. Last, the finished sequences
leave the batch, their KV blocks and slots freed (the KV housekeeping this leaves goes to the
executor).
"""

from __future__ import annotations

import numpy as np

from mcp2026ai.errors import OverloadedError
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.prompt_scoring import prompt_token_logprobs
from mcp2026ai.generation.running_batch import RunningBatch
from mcp2026ai.generation.speculative import Speculation, verify_drafts
from mcp2026ai.generation.step_executor import RunOutput, StepOutputs
from mcp2026ai.generation.step_plan import DecodeBatch, DraftCheck, KVOp, PromptChunk, ScoredPrompt, StepPlan
from mcp2026ai.generation.stream import GenerationStream, Made, deliver_all
from mcp2026ai.generation.telemetry import EngineTelemetry
from mcp2026ai.generation.text_stage import TokenStep
from mcp2026ai.generation.types import FinishReason


class OutputProcessor:
    """Applies each step's outputs for one engine; holds the step's deliveries until :meth:`hand_over`."""

    def __init__(self, batch: RunningBatch, speculation: Speculation, telemetry: EngineTelemetry) -> None:
        self.batch = batch
        self.speculation = speculation
        self.telemetry = telemetry
        self._outbox: list[tuple[GenerationStream, Made]] = []

    def apply(self, plan: StepPlan, outputs: StepOutputs) -> tuple[KVOp, ...]:
        """Apply ``outputs`` (of running ``plan``); the KV housekeeping the finished sequences leave."""
        for admission in plan.admitted:
            admission.job.stream.prefilled(admission.cached_tokens, None)
            if admission.hit_rate is not None:
                queried = len(admission.job.request.prompt_ids)
                self.telemetry.prefix_cache(admission.cached_tokens, admission.hit_rate, queried)
        for _ in plan.preempted:
            self.telemetry.preempted()
        for job in plan.aborted:
            self.finish_job(job, FinishReason.ABORT)
        for job in plan.refused:
            error = "the prompts ahead leave no time for a first token in the TTFT budget"
            job.stream.fail(OverloadedError(error, plan.retry_after_s))
            self.telemetry.failed(job)
        if plan.decode is not None and outputs.decode is not None:
            self._decoded(plan.decode, outputs.decode)
        if plan.verify or plan.scored or plan.chunks:
            for check, output in zip(plan.verify, outputs.verify, strict=True):
                self._verified(check, output)
            for prompt, output in zip(plan.scored, outputs.scored, strict=True):
                self._scored(prompt, output)
            for chunk, maybe in zip(plan.chunks, outputs.chunks, strict=True):
                self._prefilled(chunk, maybe)
        self.batch.release_finished()
        return self.batch.take_ops()

    # the runs' outputs ------------------------------------------------------------------------
    def _decoded(self, batch: DecodeBatch, output: RunOutput) -> None:
        self.speculation.gate.observe_decode(len(batch.sequences), output.seconds)
        touched: dict[int, Job] = {}
        for index, sequence in enumerate(batch.sequences):
            if sequence is None or index in batch.replayed:
                continue
            self.telemetry.inter_token(output.at - sequence.last_token_at)
            self.accept_token(sequence, output.logits[index], output.at)
            touched[id(sequence.job)] = sequence.job
        for job in touched.values():
            self.publish(job)

    def _verified(self, check: DraftCheck, output: RunOutput) -> None:
        """The sequence chooses its tokens from the rows as it would one at a time; the last token's and
        the accepted drafts' KV counts (a verification that accepts nothing still yields one token)."""
        self.speculation.gate.observe_verify(output.seconds)
        sequence = check.sequence

        def choose(row: int) -> int | None:
            self.telemetry.inter_token(output.at - sequence.last_token_at)
            self.accept_token(sequence, output.logits[row], output.at)
            return sequence.last_token if sequence.finished is None else None

        accepted = verify_drafts(check.draft, choose)
        for token in check.fed[: 1 + accepted]:
            self.batch.grow(sequence, token)
        self.telemetry.speculated(len(check.draft), accepted)
        self.speculation.verified(sequence.drafting, accepted)
        self.publish(sequence.job)

    def _scored(self, prompt: ScoredPrompt, output: RunOutput) -> None:
        job = prompt.job
        job.stream.prefilled(0, prompt_token_logprobs(output.logits, prompt.tokens, prompt.top))
        self.telemetry.prompt_tokens(len(prompt.tokens))
        for choice in job.sequences:
            self.accept_token(choice, output.logits[-1], output.at)
        self.publish(job)

    def _prefilled(self, chunk: PromptChunk, output: RunOutput | None) -> None:
        if chunk.first_token:
            self.telemetry.prompt_tokens(chunk.size)
        if output is None:
            return
        for choice in (chunk.sequence, *chunk.forks):
            self.accept_token(choice, output.logits, output.at)
        self.publish(chunk.sequence.job)

    # tokens and ends ----------------------------------------------------------------------------
    def accept_token(self, sequence: SequenceState, logits: np.ndarray, now: float) -> None:
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

    def finish_job(self, job: Job, reason: FinishReason) -> None:
        """End every unfinished choice of ``job`` with ``reason`` (one that never ran ends all its choices)."""
        if not job.sequences:
            job.steps.extend(TokenStep(index, finish=reason) for index in range(job.request.params.n))
        for sequence in job.sequences:
            if sequence.finished is None:
                sequence.finished = reason
                job.steps.append(TokenStep(sequence.index, finish=reason))
        self.publish(job)

    # hand-over ----------------------------------------------------------------------------------
    def publish(self, job: Job) -> None:
        """Queue the job's new tokens for its text stage, which runs on the stream's event loop (handed
        over once per step: :meth:`hand_over`)."""
        steps, job.steps = job.steps, []
        if steps:
            self._outbox.append((job.stream, lambda: job.text.assemble(steps)))

    def hand_over(self) -> None:
        made, self._outbox = self._outbox, []
        deliver_all(made)
