"""What the step scheduler, executor and output processing tests run on, without a model.

- :class:`ScriptedDecoder`: a CPU stand-in for ``runtime.onnx_decoder.OnnxDecoder`` with the same call
  interface. Its logits are one-hot: after token ``t`` the most likely token is ``(t + 1) % VOCAB``, so
  a greedy sequence's tokens are known in advance. It records every call, and like the real decoder it
  returns views of logits buffers that the next run overwrites.
- a word-level tokenizer (the real ``tokenizers`` library, a 64-word vocabulary written to a folder),
  so that each job has a real :class:`TextStage` and :class:`GenerationStream`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.jobs import Job, SequenceState
from mcp2026ai.generation.kv_blocks import KVBlockPool
from mcp2026ai.generation.kv_slots import SlotTable
from mcp2026ai.generation.pressure import PrefillPace
from mcp2026ai.generation.running_batch import RunningBatch
from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.speculative import Speculation
from mcp2026ai.generation.step_scheduler import StepScheduler
from mcp2026ai.generation.stopping import TokenStop
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.telemetry import EngineTelemetry
from mcp2026ai.generation.text_stage import TextStage
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import GenerationRequest, SamplingParams

VOCAB = 64
EOS = 63


class ScriptedDecoder:
    """One-hot logits: the next token after ``t`` is ``(t + 1) % VOCAB``; every call is recorded."""

    multi_row_logits = True

    def __init__(self, slots: int = 8) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self._rows = np.zeros((slots, VOCAB), np.float32)
        self._multi: dict[int, np.ndarray] = {}

    def _one_hot(self, out: np.ndarray, after: Sequence[int]) -> np.ndarray:
        out[:] = 0.0
        for row, token in enumerate(after):
            out[row, (token + 1) % VOCAB] = 10.0
        return out

    def decode(self, token_ids: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        self.calls.append(("decode", list(token_ids), list(lengths)))
        return self._one_hot(self._rows[: len(token_ids)], token_ids)

    def verify(self, slot: int, token_ids: Sequence[int], total: int) -> np.ndarray:
        self.calls.append(("verify", slot, list(token_ids), total))
        buffer = self._multi.setdefault(len(token_ids), np.zeros((len(token_ids), VOCAB), np.float32))
        return self._one_hot(buffer, token_ids)

    def prefill(self, slot: int, token_ids: Sequence[int], cached: int = 0) -> np.ndarray:
        self.calls.append(("prefill", slot, cached, len(token_ids)))
        return self._one_hot(self._rows[:1], token_ids[-1:])[0]

    def prompt_logits(self, slot: int, token_ids: Sequence[int]) -> np.ndarray:
        self.calls.append(("prompt_logits", slot, len(token_ids)))
        return self._one_hot(np.zeros((len(token_ids), VOCAB), np.float32), token_ids)

    def move(self, source: int, target: int, length: int) -> None:
        self.calls.append(("move", source, target, length))

    def release(self, slot: int) -> None:
        self.calls.append(("release", slot))

    def read_block(self, slot: int, start: int, size: int) -> np.ndarray:
        self.calls.append(("read_block", slot, start, size))
        return np.full((2, 1, size, 4), float(start), np.float32)

    def write_blocks(self, slot: int, blocks: Sequence[np.ndarray]) -> None:
        self.calls.append(("write_blocks", slot, len(blocks)))

    def kinds(self) -> list[str]:
        return [call[0] for call in self.calls]


def word_tokenizer(folder: Path) -> TextTokenizer:
    """A real tokenizer over the words ``w0 .. w63`` (token ``i`` is ``wi``)."""
    tokenizer = Tokenizer(models.WordLevel({f"w{i}": i for i in range(VOCAB)}, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # type: ignore[assignment]
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return TextTokenizer(folder)


class Jobs:
    """Makes jobs and their choices the way the engine does (a real stream and text stage each)."""

    def __init__(self, tokenizer: TextTokenizer, loop: asyncio.AbstractEventLoop) -> None:
        self.tokenizer = tokenizer
        self.loop = loop
        self.finished: list[Job] = []
        self.telemetry = EngineTelemetry("scripted")

    def job(self, prompt: Sequence[int], max_tokens: int = 8, **params: Any) -> Job:
        request = GenerationRequest(f"r{len(prompt)}-{time.monotonic_ns()}", list(prompt), SamplingParams(**params))
        job = Job(
            request=request,
            stream=GenerationStream(request.request_id, len(prompt), self.loop),
            max_tokens=max_tokens,
            abandoned=self.loop.create_future(),
            accepted_at=time.monotonic(),
            span=self.telemetry.start_span(request),
            text=TextStage(self.tokenizer, request.params, lambda reason, generated: self.finished.append(job)),
        )
        return job

    def sequence(self, job: Job, index: int) -> SequenceState:
        params = job.request.params
        stop = TokenStop(params, (EOS,), job.max_tokens)
        sampler = Sampler(params, job.request.prompt_ids, VOCAB, index, stop.stop_ids)
        return SequenceState(job=job, index=index, sampler=sampler, token_stop=stop)


def scheduler(
    jobs: Jobs,
    slots: int = 4,
    max_len: int = 256,
    blocks: int = 64,
    step_tokens: int = 64,
    chunk: int = 32,
    draft_tokens: int = 0,
    pace: PrefillPace | None = None,
) -> StepScheduler:
    """A step scheduler over a fresh batch of ``slots`` slots and ``blocks`` KV blocks of 16 tokens."""
    config = EngineConfig(
        max_num_seqs=slots, max_model_len=max_len, max_num_batched_tokens=step_tokens, prefill_chunk_tokens=chunk
    )
    batch = RunningBatch(SlotTable(slots, max_len), KVBlockPool(blocks, 16, prefix_caching=False))
    return StepScheduler(batch, config, Speculation(draft_tokens), pace or PrefillPace(), jobs.sequence)
