"""Generation engine settings (requested config: the engine builds its decoder and queues from them)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp2026ai.contract import SLAClass
from mcp2026ai.generation.prefill import CHUNK_ALIGN
from mcp2026ai.scheduling.config import DEFAULT_WEIGHTS, ClassPolicy

DEFAULT_WAITING_PER_CLASS = 256
DEFAULT_STEP_TOKENS = 256
DEFAULT_CHUNK_TOKENS = 64
"""Measured (docs/notebook/benchmarks.md, issue 34): beside 8 decoding streams a 1,900-token prompt in chunks of
64 stalls them about half as long as in chunks of 128, at the same time to its first token."""


class BatchInvariance(StrEnum):
    """Whether a sequence's tokens may depend on what else runs in its batch (docs/determinism.md)."""

    AUTO = "auto"
    """Measure at load whether this host's kernels give a lone row other logits than a batched one, and
    pay for invariance only where they do (AVX2 hosts without AVX-512)."""
    ON = "on"
    """Always run lone rows padded to two (the same kernels as a batch) on every host."""
    OFF = "off"
    """The default, the fastest single-stream decode: on hosts of the first kind (AVX2) a sequence's greedy
    or seeded tokens may change with what runs beside it (padding costs a lone decode step about 1.4x
    there)."""


def default_generation_classes() -> dict[SLAClass, ClassPolicy]:
    """Weighted fair queueing as for tensors (5/3/1); a generation waits for a slot without a deadline."""
    return {cls: ClassPolicy(weight=DEFAULT_WEIGHTS[cls], capacity=DEFAULT_WAITING_PER_CLASS) for cls in SLAClass}


class EngineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_num_seqs: int = Field(8, ge=1, le=256, description="Sequences decoded together (KV slots).")
    max_model_len: int = Field(
        2048, ge=16, le=1_048_576, description="Longest prompt + generated tokens per sequence (capped at the model's)."
    )
    max_num_batched_tokens: int | None = Field(
        None,
        ge=2,
        description="Token budget of one engine step, shared by decode (one token per running sequence) and "
        "prompt chunks (the rest); above max_num_seqs, so a waiting prompt always progresses. None: "
        f"{DEFAULT_STEP_TOKENS}, or max_num_seqs + prefill_chunk_tokens if that is more.",
    )
    prefill_chunk_tokens: int = Field(
        DEFAULT_CHUNK_TOKENS,
        ge=CHUNK_ALIGN,
        description="Longest piece of one prompt run at once: a long prompt is prefilled in such chunks, "
        "between the decode steps of the running sequences.",
    )
    kv_cache_mb: float | None = Field(
        None,
        gt=0,
        description="KV cache memory, counted in 16-token blocks that sequences take as they grow (no per-sequence "
        "max_model_len reservation); None: what max_num_seqs x max_model_len tokens take.",
    )
    speculative_tokens: int = Field(
        0,
        ge=0,
        le=16,
        description="Speculative decoding: tokens drafted by prompt lookup for each running sequence and verified "
        "in one run of its own (sampled sequences by rejection sampling); 0: off (the serving config's strategy: "
        "speculative_decoding turns it on).",
    )
    prefix_cache_mb: float = Field(
        128.0,
        ge=0,
        description="Memory for the KV of prompt prefixes (a shared system prompt is prefilled once); 0 turns it off.",
    )
    threads: int = Field(0, ge=0, le=256, description="onnxruntime intra-op threads; 0 lets onnxruntime choose.")
    batch_invariance: BatchInvariance = Field(
        BatchInvariance.OFF,
        description="auto: a sequence's tokens do not depend on what runs beside it, on every host (lone decode "
        "rows padded to two where this host's kernels need it: AVX2 hosts, a lone step about 1.4x slower); on: "
        "padded everywhere; off (default): never padded, the fastest single stream (docs/determinism.md).",
    )
    classes: dict[SLAClass, ClassPolicy] = Field(
        default_factory=default_generation_classes,
        description="Waiting queue per SLA class: weight and capacity (a full class answers 429).",
    )
    retry_after_s: float = Field(1.0, gt=0, description="Retry-After of a request refused because its queue is full.")
    max_loras: int = Field(
        0,
        ge=0,
        le=64,
        description="LoRA adapters held at once (vLLM's --max-loras); 0: no adapters (the plain decoder). Above 0 "
        "the decoder applies each row's adapter; its cost grows with max_loras x max_lora_rank (docs/lora.md).",
    )
    max_lora_rank: int = Field(
        16, ge=1, le=512, description="Highest adapter rank accepted; every adapter is padded to it (vLLM's default)."
    )
    stream_buffer_deltas: int | None = Field(
        1024,
        ge=1,
        description="Tokens a stream's reader may fall behind its generation; past it the stream ends with an "
        "error event and its decode slot is freed (a client that reads slowly or never). None: no limit.",
    )

    @property
    def step_tokens(self) -> int:
        """The step's token budget in effect (see ``max_num_batched_tokens``)."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        return max(DEFAULT_STEP_TOKENS, self.max_num_seqs + self.prefill_chunk_tokens)

    @model_validator(mode="after")
    def _budget_above_the_batch(self) -> EngineConfig:
        least = self.max_num_seqs + CHUNK_ALIGN
        if self.max_num_batched_tokens is not None and self.max_num_batched_tokens < least:
            raise ValueError(
                f"max_num_batched_tokens {self.max_num_batched_tokens} must be at least max_num_seqs + "
                f"{CHUNK_ALIGN} = {least}: each running sequence takes one token of every step's budget, "
                f"and a prompt chunk at least {CHUNK_ALIGN}"
            )
        if self.prefill_chunk_tokens % CHUNK_ALIGN:
            raise ValueError(f"prefill_chunk_tokens {self.prefill_chunk_tokens} must be a multiple of {CHUNK_ALIGN}")
        return self
