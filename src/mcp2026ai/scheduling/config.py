"""Batching configuration: batch limits, SLA-class queues and the adaptive window (requested config).

:meth:`BatchingConfig.from_contract` derives it from a model's contract and signature: the contract
gives the batch limits (and, when its ``latency`` section is set, the adaptive p99 thresholds);
a signature without a dynamic leading dimension turns batching off (each request runs alone).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp2026ai.contract import BatchingSpec, InferenceContract, SLAClass
from mcp2026ai.ir.signature import Signature

DEFAULT_WEIGHTS: dict[SLAClass, float] = {
    SLAClass.LATENCY_CRITICAL: 5.0,
    SLAClass.THROUGHPUT_GUARANTEED: 3.0,
    SLAClass.BEST_EFFORT: 1.0,
}
DEFAULT_DEADLINES_MS: dict[SLAClass, float | None] = {
    SLAClass.LATENCY_CRITICAL: 50.0,
    SLAClass.THROUGHPUT_GUARANTEED: 2000.0,
    SLAClass.BEST_EFFORT: None,
}
DEFAULT_CAPACITY = 2048
ADMIT_WITHIN = 0.8
"""Default share of a deadline the expected answer plus the estimate's measured spread may take at
admission; the rest is for the time outside the scheduler (overload benchmark, 4x capacity: about
5-9 ms of a latency-critical request's client-side p99)."""
LOW_P99_FRACTION = 0.4
"""low_p99_ms / high_p99_ms of the default rule (80 / 200), kept when the contract sets the p99."""


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClassPolicy(_Config):
    """How one SLA class is queued."""

    weight: float = Field(gt=0, description="Share of dispatches under saturation (weighted fair queueing).")
    capacity: int = Field(default=DEFAULT_CAPACITY, ge=1, le=1_000_000, description="Most requests queued at once.")
    deadline_ms: float | None = Field(
        default=None, gt=0, description="Longest a request may wait before it starts; None waits indefinitely."
    )
    admit_within: float = Field(
        default=ADMIT_WITHIN,
        gt=0,
        le=1,
        description="Under load a request with a deadline is admitted only when its expected answer, plus how much "
        "later than expected the class's requests have lately been answered, takes at most this share of the "
        "deadline; the rest covers the time the scheduler does not see (reading, decoding, encoding and writing, "
        "event-loop lag).",
    )


def default_classes() -> dict[SLAClass, ClassPolicy]:
    return {cls: ClassPolicy(weight=DEFAULT_WEIGHTS[cls], deadline_ms=DEFAULT_DEADLINES_MS[cls]) for cls in SLAClass}


class AdaptiveConfig(_Config):
    """When to widen or narrow the batching window from the observed p99 and the backlog.

    Rule: p99 > ``high_p99_ms`` and backlog > ``high_backlog`` -> window x ``grow_factor`` (up to
    ``max_delay_ms``); p99 < ``low_p99_ms`` and backlog < ``low_backlog`` -> window x ``shrink_factor``
    (down to ``min_delay_ms``). A window already outside those bounds is never pulled into them.
    """

    enabled: bool = Field(default=True, description="Adjust the window at all.")
    high_p99_ms: float = Field(default=200.0, gt=0, description="p99 above which a large backlog widens the window.")
    high_backlog: int = Field(default=1000, ge=0, description="Queued requests above which the window may widen.")
    low_p99_ms: float = Field(default=80.0, gt=0, description="p99 below which a small backlog narrows the window.")
    low_backlog: int = Field(default=100, ge=0, description="Queued requests below which the window may narrow.")
    grow_factor: float = Field(default=1.2, gt=1, le=10)
    shrink_factor: float = Field(default=0.8, gt=0, lt=1)
    max_delay_ms: float = Field(default=500.0, ge=0, le=60_000)
    min_delay_ms: float = Field(default=50.0, ge=0, le=60_000)
    interval_s: float = Field(default=1.0, gt=0, description="Shortest time between two adjustments.")
    window: int = Field(default=1000, ge=1, le=1_000_000, description="Latest latencies the p99 is taken over.")
    min_samples: int = Field(default=20, ge=1, description="Latencies needed before the first adjustment.")

    @model_validator(mode="after")
    def _ordered(self) -> AdaptiveConfig:
        if self.low_p99_ms > self.high_p99_ms:
            raise ValueError(f"low_p99_ms ({self.low_p99_ms}) must not exceed high_p99_ms ({self.high_p99_ms})")
        if self.min_delay_ms > self.max_delay_ms:
            raise ValueError(f"min_delay_ms ({self.min_delay_ms}) must not exceed max_delay_ms ({self.max_delay_ms})")
        return self

    @classmethod
    def from_contract(cls, contract: InferenceContract | None) -> AdaptiveConfig:
        """Defaults, with the p99 thresholds taken from the contract's latency budget when it sets one."""
        if contract is None or "latency" not in contract.model_fields_set:
            return cls()
        p99 = contract.latency.p99_ms
        return cls(high_p99_ms=p99, low_p99_ms=p99 * LOW_P99_FRACTION)


class BatchingConfig(_Config):
    """Everything a :class:`~mcp2026ai.scheduling.batcher.BatchingExecutor` needs to know."""

    batch_dim: bool = Field(
        default=True, description="Inputs carry a leading batch dimension requests may be merged along."
    )
    max_batch_size: int = Field(default=32, ge=1, le=4096, description="Most rows in one batch.")
    batch_rows: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="Most rows the batcher merges into one batch when below max_batch_size (a measured plan's "
        "max batch: the largest it found within the latency budget); a request may still carry max_batch_size "
        "rows and then runs alone. None: max_batch_size.",
    )
    max_queue_delay_ms: float = Field(default=2.0, ge=0, le=10_000, description="Initial batching window.")
    preferred_batch_sizes: list[int] = Field(default_factory=list, description="Row counts dispatched at once.")
    classes: dict[SLAClass, ClassPolicy] = Field(default_factory=default_classes)
    adaptive: AdaptiveConfig = Field(default_factory=lambda: AdaptiveConfig())
    max_concurrent_batches: int = Field(default=1, ge=1, le=64, description="Batches running on the backend at once.")
    retry_after_s: float = Field(default=1.0, gt=0, description="Retry-After hint sent with an overload rejection.")
    bulk_nice: int | None = Field(
        default=None,
        ge=1,
        le=19,
        description="While latency-critical requests are being served, batches without one run on worker threads "
        "whose nice value is this much higher (Linux; scheduling/cpu_priority.py). None: every batch at normal "
        "priority (host tuning: off by default, scheduling/host.py).",
    )
    inline_below_ms: float = Field(
        default=0.5,
        ge=0,
        le=100,
        description="Batches whose recent compute time is below this run on the event loop, not a worker thread "
        "(0: always a worker thread; see scheduling.placement).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> BatchingConfig:
        too_big = [size for size in self.preferred_batch_sizes if not 1 <= size <= self.max_batch_size]
        if too_big:
            raise ValueError(f"preferred_batch_sizes {too_big} must lie in 1..max_batch_size ({self.max_batch_size})")
        if not self.batch_dim and self.max_batch_size != 1:
            raise ValueError(f"max_batch_size must be 1 without a batch dimension (got {self.max_batch_size})")
        missing = [cls.value for cls in SLAClass if cls not in self.classes]
        if missing:
            raise ValueError(f"classes: no policy for {missing}")
        return self

    @property
    def batching(self) -> bool:
        return self.batch_dim and self.max_batch_size > 1

    @property
    def merge_rows(self) -> int:
        """Most rows merged into one batch: ``batch_rows`` within ``max_batch_size``."""
        return min(self.batch_rows or self.max_batch_size, self.max_batch_size)

    @classmethod
    def from_contract(cls, contract: InferenceContract | None, signature: Signature) -> BatchingConfig:
        """Batch limits from the contract (its defaults when None); no batching unless ``signature.batchable``."""
        adaptive = AdaptiveConfig.from_contract(contract)
        if not signature.batchable:
            return cls(batch_dim=False, max_batch_size=1, max_queue_delay_ms=0.0, adaptive=adaptive)
        spec = contract.batching if contract is not None else BatchingSpec.model_validate({})
        return cls(
            max_batch_size=spec.max_batch_size,
            max_queue_delay_ms=spec.max_queue_delay_ms,
            preferred_batch_sizes=list(spec.preferred_batch_sizes),
            adaptive=adaptive,
        )
