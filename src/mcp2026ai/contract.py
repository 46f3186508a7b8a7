"""Inference contracts: the promises a served model must keep.

A contract is a YAML document validated by :class:`InferenceContract`. Errors name the file, the
field path and the offending value, e.g. ``contract.yaml: latency.p99_ms: Input should be greater
than 0 (got -5)``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mcp2026ai.errors import ContractError, InvalidInputError
from mcp2026ai.messages import describe_validation_error, read_yaml_file


class Precision(StrEnum):
    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"  # OpenVINO's CPU plugin computing an FP32 model in bfloat16 (inference precision hint)
    INT8 = "int8"
    INT4 = "int4"  # language models' weights (MatMulNBits)


class SLAClass(StrEnum):
    LATENCY_CRITICAL = "latency-critical"
    THROUGHPUT_GUARANTEED = "throughput-guaranteed"
    BEST_EFFORT = "best-effort"


def parse_sla_class(raw: str) -> SLAClass:
    """A class as a caller names it (``X-SLA-Class``, gRPC metadata, a parameter); unknown is InvalidInputError."""
    try:
        return SLAClass(raw.strip().lower())
    except ValueError:
        known = ", ".join(cls.value for cls in SLAClass)
        raise InvalidInputError(f"unknown SLA class {raw!r} (known: {known})") from None


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LatencySpec(_Section):
    p99_ms: float = Field(100.0, gt=0, description="p99 end-to-end latency budget in milliseconds.")
    p95_ms: float | None = Field(None, gt=0, description="Optional p95 budget in milliseconds.")


class ThroughputSpec(_Section):
    min_rps: float = Field(0.0, ge=0, description="Throughput floor in inferences (rows) per second.")


class AccuracySpec(_Section):
    max_drift: float = Field(
        0.01,
        ge=0,
        le=1,
        description="Largest drift allowed against the FP32 baseline: relative L2 for tensor models, "
        "1 - greedy token agreement with the fp32 import for language models.",
    )


class PrecisionSpec(_Section):
    allowed: list[Precision] = Field(
        default_factory=lambda: [Precision.FP32], min_length=1, description="Precisions a plan may use."
    )


class ReplicaRange(_Section):
    min: int = Field(1, ge=0, le=1024, description="Fewest replicas kept running (0: scale to zero when idle).")
    max: int = Field(1, ge=1, le=1024, description="Most replicas autoscaling may start.")

    @model_validator(mode="after")
    def _min_within_max(self) -> ReplicaRange:
        if self.min > self.max:
            raise ValueError(f"replicas.min ({self.min}) must not exceed replicas.max ({self.max})")
        return self


class AutoscaleSpec(_Section):
    target_ongoing_requests: float = Field(
        2.0, gt=0, description="Requests in flight per replica that autoscaling aims for (queue depth included)."
    )
    upscale_delay_s: float = Field(3.0, ge=0, description="How long the load must stay above target to add replicas.")
    downscale_delay_s: float = Field(30.0, ge=0, description="How long it must stay below to remove replicas.")
    target_gpu_utilization: float | None = Field(
        None, gt=0, le=1, description="GPU utilisation target (seed configs); ignored on hosts without a GPU."
    )


class ResourceSpec(_Section):
    memory_mb: float | None = Field(None, gt=0, description="Peak resident memory budget in MiB.")
    power_w: float | None = Field(None, gt=0, description="Power budget in watts (informational on CPU).")
    gpu_memory_gb: float | None = Field(
        None, gt=0, description="GPU memory budget in GiB (a host without a GPU ignores it, saying so)."
    )
    replicas: ReplicaRange | None = Field(None, description="Replica range for scale-out (`mcp serve --replicas`).")
    min_replicas: int | None = Field(
        None, ge=0, le=1024, description="Shorthand for replicas.min (the seed configs' spelling)."
    )
    autoscale: AutoscaleSpec | None = Field(None, description="Autoscale between replicas.min and replicas.max.")

    @model_validator(mode="after")
    def _one_minimum(self) -> ResourceSpec:
        if self.min_replicas is not None and self.replicas is not None and self.replicas.min != self.min_replicas:
            raise ValueError(
                f"min_replicas ({self.min_replicas}) and replicas.min ({self.replicas.min}) disagree; give one"
            )
        return self

    def replica_range(self) -> ReplicaRange | None:
        """The replicas to run, with the seed's ``min_replicas`` folded in (None: not stated)."""
        if self.replicas is not None:
            return self.replicas
        if self.min_replicas is not None:
            return ReplicaRange(min=self.min_replicas, max=max(1, self.min_replicas))
        return None


class BatchingSpec(_Section):
    max_batch_size: int = Field(32, ge=1, le=4096, description="Largest batch the server may form.")
    max_queue_delay_ms: float = Field(2.0, ge=0, le=10_000, description="Longest a request waits for a batch to fill.")
    preferred_batch_sizes: list[int] = Field(
        default_factory=list, description="Batch sizes the batcher dispatches as soon as reached."
    )

    @model_validator(mode="after")
    def _preferred_within_max(self) -> BatchingSpec:
        too_big = [size for size in self.preferred_batch_sizes if not 1 <= size <= self.max_batch_size]
        if too_big:
            raise ValueError(f"preferred_batch_sizes {too_big} must lie in 1..max_batch_size ({self.max_batch_size})")
        return self


class SequenceControls(_Section):
    """Names of the control inputs the server fills for a sequence (each optional, as the model declares)."""

    start: str | None = Field(None, description="Input set to 1 on a sequence's first request, else 0.")
    end: str | None = Field(None, description="Input set to 1 on a sequence's last request, else 0.")
    ready: str | None = Field(None, description="Input set to 1 when the request carries data (always).")
    corrid: str | None = Field(None, description="Input given the correlation id (integer or string).")


class SequenceState(_Section):
    """Implicit state: the output fed back as the input on the sequence's next request (zeros at its start)."""

    input: str = Field(description="State input the server supplies.")
    output: str = Field(description="State output the server keeps.")


class SequenceSpec(_Section):
    """Sequence batching: requests of one correlation id run in order with their controls and state."""

    controls: SequenceControls = Field(default_factory=SequenceControls)
    state: list[SequenceState] = Field(default_factory=list)
    idle_timeout_s: float = Field(60.0, gt=0, le=86_400, description="A sequence idle this long is dropped.")
    strategy: Literal["direct", "oldest"] = Field("direct", description="Triton's scheduling strategy.")


class GenerationSpec(_Section):
    """A language model's promises (time to first token, inter-token latency, tokens/s) and limits."""

    ttft_p99_ms: float | None = Field(None, gt=0, description="p99 time to first token, milliseconds.")
    itl_p99_ms: float | None = Field(None, gt=0, description="p99 inter-token latency, milliseconds.")
    min_tokens_per_s: float | None = Field(None, ge=0, description="Aggregate output tokens per second, at least.")
    max_num_seqs: int | None = Field(
        None, ge=1, le=256, description="Sequences decoded together; unset: the policy measures 1 and 8."
    )
    max_model_len: int | None = Field(None, ge=16, description="Longest prompt + answer in tokens.")


Objective = Literal["latency", "throughput", "memory"]


class InferenceContract(_Section):
    """What a registered model promises; the policy orchestrator plans against it."""

    sla_class: SLAClass = Field(SLAClass.BEST_EFFORT, description="Scheduling class of the model's traffic.")
    objective: Objective = Field("latency", description="What to optimise once every constraint is met.")
    latency: LatencySpec = Field(default_factory=LatencySpec)
    throughput: ThroughputSpec = Field(default_factory=ThroughputSpec)
    accuracy: AccuracySpec = Field(default_factory=AccuracySpec)
    precision: PrecisionSpec = Field(default_factory=PrecisionSpec)
    resources: ResourceSpec = Field(default_factory=ResourceSpec)
    batching: BatchingSpec = Field(default_factory=BatchingSpec)
    sequence: SequenceSpec | None = Field(None, description="Stateful model: sequence batching (Triton's).")
    generation: GenerationSpec | None = Field(None, description="Language models: TTFT, ITL, tokens/s, limits.")


def contract_json_schema() -> dict[str, Any]:
    """The JSON Schema of the contract document (``mcp contract schema``)."""
    return InferenceContract.model_json_schema()


def parse_contract(document: Any, source: str = "contract") -> InferenceContract:
    """Validate an already-parsed document; ``source`` names it in error messages."""
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ContractError(f"{source}: expected a mapping at the top level, got {type(document).__name__}")
    try:
        return InferenceContract.model_validate(document)
    except ValidationError as exc:
        raise ContractError(describe_validation_error(exc, source)) from None


def load_contract(path: Path | str) -> InferenceContract:
    """Read and validate a contract YAML (or JSON) file."""
    return parse_contract(read_yaml_file(Path(path), "contract"), str(path))


def contract_to_json(contract: InferenceContract) -> str:
    return json.dumps(contract.model_dump(mode="json"), sort_keys=True)
