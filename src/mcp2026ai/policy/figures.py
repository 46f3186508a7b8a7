"""What a plan measured, from interleaved rounds: robust figures and the trace of every round.

Each round times every session once (A B C A B C ...), so a burst of outside load hits one round of
each plan rather than all of one plan. A plan's figures are robust statistics over its rounds: the
typical latency is the median of the round medians, the fastest run breaks ties, and the p99 (the
contract's feasibility check) is the median of the round p99s, reported with its spread (highest
minus lowest round p99).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.policy.load import LoadReading


class RoundFigures(BaseModel):
    """One round of one plan, as the trace keeps it."""

    model_config = ConfigDict(frozen=True)

    round: int
    runs: int = Field(description="Timed runs in this round (batch 1 and the plan's batch).")
    p50_ms: float = Field(description="Median latency of one row at batch 1 in this round.")
    min_ms: float
    p99_ms: float
    batch_p50_ms: float | None = Field(None, description="Median time of one batch at the plan's max batch.")
    outside_cores: float | None = Field(None, description="CPU cores busy with other work while this round ran.")
    load_avg_1m: float | None = None
    remeasured: bool = Field(False, description="Taken again once the machine was quiet (first try under load).")


class Figures(BaseModel):
    """What one plan measured: latency at batch 1, one batch at its size, throughput, memory."""

    model_config = ConfigDict(frozen=True)

    min_ms: float | None = Field(
        None, description="Fastest run of one row at batch 1: what the plan does when nothing else wants the CPU."
    )
    p50_ms: float = Field(description="Typical latency of one row at batch 1 (median of the round medians).")
    p95_ms: float = Field(description="p95 latency of one row at batch 1 (median over rounds).")
    p99_ms: float = Field(description="p99 latency of one row at batch 1 (median over rounds).")
    batch_p95_ms: float = Field(description="p95 time of one batch at the plan's max_batch_size.")
    batch_p99_ms: float = Field(description="p99 time of one batch at the plan's max_batch_size.")
    throughput_rps: float = Field(description="Rows per second at the plan's max_batch_size.")
    memory_mb: float | None = Field(None, description="Peak resident memory added by the session, MiB.")
    runs: int = Field(0, description="Timed runs behind these figures.")
    load_ms: float = Field(0.0, description="Time to build the session.")
    batch_p50_ms: float | None = Field(None, description="Median time of one batch at the plan's max_batch_size.")
    p99_spread_ms: float | None = Field(None, description="Highest minus lowest round p99 (the p99's noise).")
    rounds: list[RoundFigures] = Field(default_factory=list, description="Every interleaved round, with the load.")
    loaded_rounds: int = Field(0, description="Rounds kept although measured under heavy outside load.")
    drift: float | None = Field(
        None,
        description="Relative L2 drift of the outputs against FP32 onnxruntime on the same inputs, measured for"
        " a plan at a reduced inference precision (None: the plan computes in the artifact's own precision).",
    )

    @property
    def remeasured_rounds(self) -> int:
        return sum(1 for r in self.rounds if r.remeasured)


@dataclass
class Slot:
    """One session's share of one round: batch-1 run times and batch run times by size (seconds)."""

    round: int
    single: list[float] = field(default_factory=list)
    batches: dict[int, list[float]] = field(default_factory=dict)
    busy: dict[int, list[float]] = field(default_factory=dict)
    """Batch run times by size with every instance of a multi-instance plan running at once."""
    load: LoadReading = field(default_factory=LoadReading)
    remeasured: bool = False
    memory_mb: float | None = None


def _ms(seconds: float) -> float:
    return round(float(seconds) * 1000, 3)


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def round_figures(slot: Slot, size: int, instances: int = 1) -> RoundFigures:
    batch = slot.busy.get(size) if instances > 1 else slot.batches.get(size) if size > 1 else None
    return RoundFigures(
        round=slot.round,
        runs=len(slot.single) + (len(batch) if batch else 0),
        p50_ms=_ms(np.percentile(slot.single, 50)),
        min_ms=_ms(min(slot.single)),
        p99_ms=_ms(np.percentile(slot.single, 99)),
        batch_p50_ms=_ms(np.percentile(batch, 50)) if batch else None,
        outside_cores=slot.load.outside_cores,
        load_avg_1m=slot.load.load_avg_1m,
        remeasured=slot.remeasured,
    )


def _batch_runs(slots: Sequence[Slot], size: int, instances: int) -> list[list[float]]:
    """Each round's run times of a batch of ``size``: with every instance busy for a multi-instance plan."""
    if instances > 1:
        return [slot.busy[size] for slot in slots if slot.busy.get(size)]
    if size == 1:
        return [slot.single for slot in slots if slot.single]
    return [slot.batches[size] for slot in slots if slot.batches.get(size)]


def robust_figures(
    slots: Sequence[Slot],
    size: int,
    memory_mb: float | None,
    load_ms: float,
    heavy_cores: float | None = None,
    instances: int = 1,
) -> Figures | None:
    """Figures of a session's candidate at ``size``: batch-1 latency over every round, the batch over the
    rounds that timed ``size`` (None: none did). A plan of several instances runs that many batches at
    once: its batch times are taken with all of them busy, its throughput counts all of them."""
    timed = [slot for slot in slots if slot.single]
    batch_runs = _batch_runs(slots, size, instances)
    if not timed or not batch_runs:
        return None
    p99s = [float(np.percentile(slot.single, 99)) for slot in timed]
    loaded = [s for s in timed if heavy_cores is not None and (s.load.outside_cores or 0.0) > heavy_cores]
    return Figures(
        min_ms=_ms(min(min(slot.single) for slot in timed)),
        p50_ms=_ms(_median([float(np.percentile(slot.single, 50)) for slot in timed])),
        p95_ms=_ms(_median([float(np.percentile(slot.single, 95)) for slot in timed])),
        p99_ms=_ms(_median(p99s)),
        batch_p50_ms=_ms(_median([float(np.percentile(runs, 50)) for runs in batch_runs])),
        batch_p95_ms=_ms(_median([float(np.percentile(runs, 95)) for runs in batch_runs])),
        batch_p99_ms=_ms(_median([float(np.percentile(runs, 99)) for runs in batch_runs])),
        throughput_rps=round(instances * size / _median([float(np.mean(runs)) for runs in batch_runs]), 1),
        memory_mb=memory_mb,
        runs=sum(len(slot.single) for slot in timed)
        + (sum(len(runs) for runs in batch_runs) if size > 1 or instances > 1 else 0),
        load_ms=round(load_ms, 2),
        p99_spread_ms=_ms(max(p99s) - min(p99s)),
        rounds=[round_figures(slot, size, instances) for slot in timed],
        loaded_rounds=len(loaded),
    )
