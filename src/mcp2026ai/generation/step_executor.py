"""The step executor: runs a :class:`~mcp2026ai.generation.step_plan.StepPlan` against the decoder and
returns its raw outputs, the logits rows output processing samples from (vLLM v1's model executor).

It decides nothing: the KV housekeeping in the plan's order, then the decode run, each draft
verification, each scored prompt, each prompt chunk (with the prefix cache keeping a completed
prompt's blocks, and the KV copies to the prompt's other choices), exactly as planned. Each run is
timed (the draft gate weighs verification against decode runs) and stamped with the monotonic time
it ended (time to first token, inter-token gaps).

The decoder reuses its logits buffers from run to run (``runtime/onnx_decoder.py``): the rows of a
run are copied when a later run of the same step would overwrite them, and handed over as they are
from the step's last run (one decode run per step, the common case, copies nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mcp2026ai.generation.kv_slots import SlotMove
from mcp2026ai.generation.prefix_cache import PrefixCache
from mcp2026ai.generation.step_plan import KVOp, PrefixRestore, PromptChunk, SlotRelease, StepPlan
from mcp2026ai.ir.lora_graph import NO_ADAPTER


class StepDecoder(Protocol):
    """What the executor needs of the decoder (``runtime.onnx_decoder.OnnxDecoder`` is the real one)."""

    @property
    def multi_row_logits(self) -> bool: ...

    def decode(
        self, token_ids: Sequence[int], lengths: Sequence[int], adapters: Sequence[int] | None = None
    ) -> np.ndarray: ...

    def verify(self, slot: int, token_ids: Sequence[int], total: int, adapter: int = NO_ADAPTER) -> np.ndarray: ...

    def prefill(
        self, slot: int, token_ids: Sequence[int], cached: int = 0, adapter: int = NO_ADAPTER
    ) -> np.ndarray: ...

    def prompt_logits(self, slot: int, token_ids: Sequence[int], adapter: int = NO_ADAPTER) -> np.ndarray: ...

    def move(self, source: int, target: int, length: int) -> None: ...

    def release(self, slot: int) -> None: ...

    def read_block(self, slot: int, start: int, size: int) -> np.ndarray: ...

    def write_blocks(self, slot: int, blocks: Sequence[np.ndarray]) -> None: ...


@dataclass(frozen=True)
class RunOutput:
    """One decoder run's logits, how long it took and when it ended."""

    logits: np.ndarray
    """Decode: ``[rows, vocab]``; verification: ``[1 + drafts, vocab]``; scored prompt: ``[tokens,
    vocab]``; a prompt's completing chunk: ``[vocab]`` (its last position)."""
    seconds: float
    at: float
    """``time.monotonic()`` when the run ended."""


@dataclass(frozen=True)
class StepOutputs:
    """The raw outputs of one plan, in the plan's order."""

    decode: RunOutput | None = None
    verify: tuple[RunOutput, ...] = ()
    scored: tuple[RunOutput, ...] = ()
    chunks: tuple[RunOutput | None, ...] = ()
    """One per planned chunk: None for a chunk that samples nothing (not its prompt's last)."""


class StepExecutor:
    """Runs plans against one decoder."""

    def __init__(self, decoder: StepDecoder, prefix_cache: PrefixCache | None = None) -> None:
        self.decoder = decoder
        self.prefix_cache = prefix_cache

    def run(self, plan: StepPlan) -> StepOutputs:
        self.apply(plan.kv_ops)
        decoder, left = self.decoder, plan.runs
        decode = None
        if plan.decode is not None:
            left -= 1
            rows = plan.decode
            adapters = (rows.adapters,) if rows.adapters else ()  # the base model alone: the plain call
            decode = self._timed(left, decoder.decode, rows.tokens, rows.lengths, *adapters)
        verify = []
        for check in plan.verify:
            left -= 1
            adapter = (check.adapter,) if check.adapter != NO_ADAPTER else ()
            verify.append(self._timed(left, decoder.verify, check.slot, check.fed, check.total, *adapter))
        scored = []
        for prompt in plan.scored:
            left -= 1
            adapter = (prompt.adapter,) if prompt.adapter != NO_ADAPTER else ()
            scored.append(self._timed(0, decoder.prompt_logits, prompt.slot, prompt.tokens, *adapter))  # a copy
            for fork in prompt.fork_slots:
                decoder.move(prompt.slot, fork, len(prompt.tokens))
        chunks = []
        for chunk in plan.chunks:
            left -= 1
            chunks.append(self._prefill(chunk, left))
        return StepOutputs(decode, tuple(verify), tuple(scored), tuple(chunks))

    def apply(self, ops: Sequence[KVOp]) -> None:
        """Make the decoder's KV buffers follow the slot bookkeeping: moves, releases, prefix restores."""
        for op in ops:
            if isinstance(op, SlotMove):
                self.decoder.move(op.source, op.target, op.length)
            elif isinstance(op, SlotRelease):
                self.decoder.release(op.slot)
            elif isinstance(op, PrefixRestore):
                self.decoder.write_blocks(op.slot, op.blocks)

    def _prefill(self, chunk: PromptChunk, later_runs: int) -> RunOutput | None:
        tokens = chunk.tokens[: chunk.end]
        kept = later_runs if chunk.samples else 0  # a chunk that samples nothing: its logits are never read
        adapter = (chunk.adapter,) if chunk.adapter != NO_ADAPTER else ()
        output = self._timed(kept, self.decoder.prefill, chunk.slot, tokens, chunk.start, *adapter)
        if not chunk.completes:
            return None
        if chunk.remember and self.prefix_cache:
            self.prefix_cache.remember(chunk.tokens, chunk.slot, self.decoder, chunk.sequence.job.prefix_root)
        for fork in chunk.fork_slots:
            self.decoder.move(chunk.slot, fork, chunk.end)
        return output if chunk.samples else None

    @staticmethod
    def _timed(later_runs: int, run: Callable[..., np.ndarray], *args: Any) -> RunOutput:
        """``run(*args)`` once; its logits copied when ``later_runs`` of the step may overwrite the buffer."""
        started = time.perf_counter()
        logits = run(*args)
        seconds = time.perf_counter() - started
        at = time.monotonic()
        return RunOutput(logits.copy() if later_runs else logits, seconds, at)
