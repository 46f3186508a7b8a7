"""Short, bounded measurement of candidate plans with a real onnxruntime backend on synthetic inputs.

Candidates that differ only in batch size share one session: it is loaded once, timed at batch 1
(p50/p99 latency), then timed at each batch size in ascending order (p99 of one batch, rows per
second). Every phase is bounded by a run count and by time (:class:`ProfileBudget`), and the whole
pass by ``total_seconds``, shared fairly: each session gets an equal part of what is left when it
starts, so a slow model's single-thread batches cannot use up the time before its multi-thread
session is measured. Larger batches are skipped once one batch already takes longer than the
latency budget (they would only take longer). Candidates skipped are reported as not measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.clock import Clock
from mcp2026ai.errors import MCPError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.memory import MemoryMeter, release_freed_memory
from mcp2026ai.policy.synthetic import SyntheticShapes, synthetic_inputs
from mcp2026ai.registry import Preprocessing
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.catalog import create_backend


class ProfileBudget(BaseModel):
    """Bounds on profiling; defaults keep one plan under about a second."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seconds_per_plan: float = Field(1.0, gt=0, le=120, description="Time for one plan's timed phases.")
    latency_runs: int = Field(100, ge=1, le=100_000, description="Most timed runs at batch 1 per session.")
    batch_runs: int = Field(30, ge=1, le=100_000, description="Most timed runs per batch size.")
    min_runs: int = Field(3, ge=1, le=1000, description="Fewest timed runs per phase, whatever the time.")
    warmup_runs: int = Field(2, ge=0, le=100, description="Untimed runs before each phase.")
    total_seconds: float = Field(15.0, gt=0, le=3600, description="Budget for measuring every candidate.")


class Figures(BaseModel):
    """What one plan measured: latency at batch 1, one batch at its size, throughput, memory."""

    model_config = ConfigDict(frozen=True)

    min_ms: float | None = Field(
        None, description="Fastest run of one row at batch 1: what the plan does when nothing else wants the CPU."
    )
    p50_ms: float = Field(description="Median latency of one row at batch 1.")
    p95_ms: float = Field(description="p95 latency of one row at batch 1.")
    p99_ms: float = Field(description="p99 latency of one row at batch 1.")
    batch_p95_ms: float = Field(description="p95 time of one batch at the plan's max_batch_size.")
    batch_p99_ms: float = Field(description="p99 time of one batch at the plan's max_batch_size.")
    throughput_rps: float = Field(description="Rows per second at the plan's max_batch_size.")
    memory_mb: float | None = Field(None, description="Peak resident memory added by the session, MiB.")
    runs: int = Field(0, description="Timed runs behind these figures.")
    load_ms: float = Field(0.0, description="Time to build the session.")


class Measurement(BaseModel):
    model_config = ConfigDict(frozen=True)

    figures: Figures | None = None
    note: str = ""


Measurer = Callable[[Sequence[Candidate]], dict[Candidate, Measurement]]


def group_by_session(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    groups: dict[tuple[object, ...], list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.session_key(), []).append(candidate)
    return list(groups.values())


class Profiler:
    """Measures candidates of one model; ``model_path`` maps a variant to its ONNX file, ``signature`` to
    its signature (one signature for all, or a callable: an FP16 variant may take FP16 inputs)."""

    def __init__(
        self,
        model_path: Callable[[Variant], Path],
        signature: Signature | Callable[[Variant], Signature],
        budget: ProfileBudget | None = None,
        shapes: SyntheticShapes | None = None,
        preprocessing: Preprocessing | None = None,
        clock: Clock = time.perf_counter,
        latency_limit_ms: float | None = None,
    ) -> None:
        self.model_path = model_path
        self.signature_for = signature if callable(signature) else lambda _: signature
        self.budget = budget or ProfileBudget()
        self.shapes = shapes or SyntheticShapes()
        self.preprocessing = preprocessing
        self.clock = clock
        self.latency_limit_ms = latency_limit_ms

    def __call__(self, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        deadline = self.clock() + self.budget.total_seconds
        results: dict[Candidate, Measurement] = {}
        if candidates:
            self._prime(candidates[0])
        groups = group_by_session(candidates)
        for index, group in enumerate(groups):
            now = self.clock()
            if now > deadline:
                skipped = Measurement(note=f"not measured: planning budget of {self.budget.total_seconds:g} s spent")
                results.update(dict.fromkeys(group, skipped))
                continue
            share_ends = now + (deadline - now) / (len(groups) - index)
            try:
                results.update(self._measure_group(group, share_ends))
            except MCPError as exc:
                results.update(dict.fromkeys(group, Measurement(note=f"failed: {exc}")))
        return results

    def _prime(self, candidate: Candidate) -> None:
        """One untimed load and run, so one-time costs (code pages, thread pools) hit no candidate's figures."""
        signature = self.signature_for(candidate.variant)
        backend = create_backend(self.model_path(candidate.variant), signature, candidate.plan)
        try:
            backend.load()
            backend.infer(synthetic_inputs(signature, 1, self.shapes, self.preprocessing))
        except Exception:  # noqa: BLE001 - the measured load reports any failure
            return
        finally:
            backend.unload()

    def _measure_group(self, group: list[Candidate], share_ends: float) -> dict[Candidate, Measurement]:
        first = group[0]
        release_freed_memory()
        meter = MemoryMeter()
        meter.start()
        started = self.clock()
        backend = create_backend(self.model_path(first.variant), self.signature_for(first.variant), first.plan)
        try:
            backend.load()
        except Exception as exc:  # onnxruntime raises its own exception types  # noqa: BLE001
            return dict.fromkeys(group, Measurement(note=f"failed to load: {str(exc).splitlines()[0][:200]}"))
        load_ms = (self.clock() - started) * 1000
        try:
            return self._time_group(backend, group, meter, load_ms, share_ends)
        finally:
            backend.unload()

    def _time_group(
        self, backend: Backend, group: list[Candidate], meter: MemoryMeter, load_ms: float, share_ends: float
    ) -> dict[Candidate, Measurement]:
        phase_s = self.budget.seconds_per_plan / 2
        single = self._time_runs(backend, 1, self.budget.latency_runs, phase_s, share_ends)
        meter.sample()
        results: dict[Candidate, Measurement] = {}
        slowest_ms = 0.0
        for size in sorted({candidate.plan.max_batch_size for candidate in group}):
            members = [c for c in group if c.plan.max_batch_size == size]
            skip = self._skip_reason(slowest_ms, share_ends) if size > 1 else None
            if skip is not None:
                results.update(dict.fromkeys(members, Measurement(note=skip)))
                continue
            try:
                batch = (
                    single if size == 1 else self._time_runs(backend, size, self.budget.batch_runs, phase_s, share_ends)
                )
            except MCPError as exc:
                results.update(dict.fromkeys(members, Measurement(note=f"failed at batch {size}: {exc}")))
                continue
            meter.sample()
            figures = Figures(
                min_ms=_ms(min(single)),
                p50_ms=_ms(np.percentile(single, 50)),
                p95_ms=_ms(np.percentile(single, 95)),
                p99_ms=_ms(np.percentile(single, 99)),
                batch_p95_ms=_ms(np.percentile(batch, 95)),
                batch_p99_ms=_ms(np.percentile(batch, 99)),
                throughput_rps=round(size / float(np.mean(batch)), 1),
                memory_mb=meter.peak_mb(),
                runs=len(single) + (len(batch) if size > 1 else 0),
                load_ms=round(load_ms, 2),
            )
            results.update(dict.fromkeys(members, Measurement(figures=figures)))
            slowest_ms = figures.batch_p99_ms
        return results

    def _skip_reason(self, slowest_ms: float, share_ends: float) -> str | None:
        """Why the next (larger) batch size is not measured, or None to measure it."""
        limit = self.latency_limit_ms
        if limit is not None and slowest_ms > limit:
            return f"not measured: a smaller batch already took {slowest_ms:g} ms (p99 budget {limit:g} ms)"
        if self.clock() > share_ends:
            return "not measured: this session's share of the planning budget was spent"
        return None

    def _time_runs(self, backend: Backend, batch: int, max_runs: int, seconds: float, hard_stop: float) -> list[float]:
        """Time up to ``max_runs`` runs for about ``seconds`` (at least ``min_runs`` unless that would
        run past ``hard_stop``; always at least one)."""
        inputs = synthetic_inputs(backend.signature, batch, self.shapes, self.preprocessing)
        for _ in range(self.budget.warmup_runs):
            backend.infer(inputs)
            if self.clock() > hard_stop:
                break
        times: list[float] = []
        stop = self.clock() + seconds
        while len(times) < max_runs and (len(times) < self.budget.min_runs or self.clock() < stop):
            if times and self.clock() > hard_stop:
                break
            started = self.clock()
            backend.infer(inputs)
            times.append(self.clock() - started)
        return times


def _ms(seconds: float) -> float:
    return round(float(seconds) * 1000, 3)
