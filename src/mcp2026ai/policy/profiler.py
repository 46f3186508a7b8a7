"""Short, bounded measurement of candidate plans with real backends on synthetic inputs.

Candidates that differ only in batch size share one session. Every session is loaded first (its
load time and memory measured one at a time), then timed in interleaved rounds: round 1 times
session A, B, C, round 2 A, B, C again, and so on (``ProfileBudget.rounds``). In each session's
slot of a round it runs at batch 1, then at each batch size in ascending order. A burst of outside
load thus lands on one round of every plan instead of on every round of one plan, and the figures
(:mod:`.figures`) are robust statistics over the rounds.

Each slot records the outside load on this process's CPUs (:mod:`.load`). A slot measured while
more than ``heavy_load`` of the cores were busy elsewhere is measured again once the machine is
quiet (waiting at most ``quiet_wait_s``); the round is marked ``remeasured`` in the trace, and a
slot that could not be retaken stays counted in ``loaded_rounds``.

Every phase is bounded by a run count and by time (:class:`ProfileBudget`), and the whole pass by
``total_seconds``, shared fairly: each slot gets an equal part of what is left when it starts. The
first round always times every loaded session at batch 1. Larger batches are skipped once one batch
already takes longer than the latency budget (they would only take longer). Candidates skipped are
reported as not measured.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.clock import Clock
from mcp2026ai.errors import MCPError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.policy.candidates import INFERENCE_PRECISIONS, Candidate, Variant
from mcp2026ai.policy.figures import Figures, Slot, robust_figures
from mcp2026ai.policy.load import CpuLoadMeter, LoadMeter
from mcp2026ai.policy.memory import MemoryMeter, release_freed_memory
from mcp2026ai.policy.synthetic import SyntheticShapes, synthetic_inputs
from mcp2026ai.quantization.drift import compare
from mcp2026ai.registry import Preprocessing
from mcp2026ai.runtime.base import Backend, BackendClass
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.cpu_affinity import usable_cores
from mcp2026ai.runtime.plan import Plan

DRIFT_SAMPLES = 4
"""Synthetic inputs on which a reduced-precision plan's outputs are compared with FP32's."""

__all__ = ["Figures", "Measurement", "Measurer", "ProfileBudget", "Profiler", "group_by_session"]


class ProfileBudget(BaseModel):
    """Bounds on profiling; defaults keep one plan under about a second."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seconds_per_plan: float = Field(1.0, gt=0, le=120, description="Time for one plan's timed phases.")
    latency_runs: int = Field(100, ge=1, le=100_000, description="Most timed runs at batch 1 per session.")
    batch_runs: int = Field(30, ge=1, le=100_000, description="Most timed runs per batch size.")
    min_runs: int = Field(3, ge=1, le=1000, description="Fewest timed runs per phase, whatever the time.")
    warmup_runs: int = Field(2, ge=0, le=100, description="Untimed runs before each phase.")
    total_seconds: float = Field(15.0, gt=0, le=3600, description="Budget for measuring every candidate.")
    rounds: int = Field(5, ge=1, le=100, description="Interleaved rounds: each times every session once.")
    heavy_load: float = Field(
        0.5, ge=0, le=1, description="Share of this process's cores busy elsewhere above which a round is retaken."
    )
    quiet_wait_s: float = Field(3.0, ge=0, le=600, description="Longest wait for a quiet machine to retake rounds.")
    quiet_probe_s: float = Field(0.25, gt=0, le=10, description="Window over which quiet is judged.")


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


@dataclass
class _Session:
    """A loaded session, the batch sizes its candidates want and what its rounds measured."""

    group: list[Candidate]
    backend: Backend
    load_ms: float
    memory_mb: float | None
    sizes: list[int]
    slots: list[Slot] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)
    """Batch sizes not measured (or failed), with the reason."""
    drift: float | None = None
    """A reduced inference precision's drift against FP32 (None: the plan computes at the artifact's)."""

    def timed_sizes(self) -> list[int]:
        return [size for size in self.sizes if size > 1 and size not in self.notes]


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
        load_meter: LoadMeter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        cores: int | None = None,
        backend_factory: BackendClass = create_backend,
    ) -> None:
        self.model_path = model_path
        self.signature_for = signature if callable(signature) else lambda _: signature
        self.budget = budget or ProfileBudget()
        self.shapes = shapes or SyntheticShapes()
        self.preprocessing = preprocessing
        self.clock = clock
        self.latency_limit_ms = latency_limit_ms
        self.load_meter: LoadMeter = load_meter or CpuLoadMeter()
        self.sleep = sleep
        self.cores = cores or usable_cores()
        self.backend_factory = backend_factory
        self._fp32_outputs: dict[str, list[dict[str, np.ndarray]]] = {}
        """FP32 onnxruntime's outputs on the drift inputs, per variant digest (computed once)."""

    @property
    def heavy_cores(self) -> float:
        """Outside load (cores) above which a slot counts as measured under heavy load."""
        return self.budget.heavy_load * self.cores

    def __call__(self, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        deadline = self.clock() + self.budget.total_seconds
        results: dict[Candidate, Measurement] = {}
        sessions: list[_Session] = []
        for first in {candidate.plan.runtime: candidate for candidate in reversed(candidates)}.values():
            self._prime(first)  # each runtime's one-time costs (code pages, plugins) hit no candidate
        try:
            for group in group_by_session(candidates):
                if self.clock() > deadline:
                    spent = f"not measured: planning budget of {self.budget.total_seconds:g} s spent"
                    results.update(dict.fromkeys(group, Measurement(note=spent)))
                    continue
                opened = self._open(group)
                if isinstance(opened, _Session):
                    sessions.append(opened)
                else:
                    results.update(opened)
            self._rounds(sessions, deadline)
            self._retake_loaded(sessions, deadline)
            for session in sessions:
                results.update(self._results(session))
        finally:
            for session in sessions:
                session.backend.unload()
        return results

    def _new_backend(self, candidate: Candidate) -> Backend:
        signature = self.signature_for(candidate.variant)
        return self.backend_factory(self.model_path(candidate.variant), signature, candidate.plan)

    def _prime(self, candidate: Candidate) -> None:
        """One untimed load and run, so one-time costs (code pages, thread pools, plugins) hit no candidate's
        figures."""
        backend = self._new_backend(candidate)
        try:
            backend.load()
            backend.infer(synthetic_inputs(backend.signature, 1, self.shapes, self.preprocessing))
        except Exception:  # noqa: BLE001 - the measured load reports any failure
            return
        finally:
            backend.unload()

    def _open(self, group: list[Candidate]) -> _Session | dict[Candidate, Measurement]:
        """Load the group's session (load time, memory after one untimed run), or the failure."""
        release_freed_memory()
        meter = MemoryMeter()
        meter.start()
        started = self.clock()
        backend = self._new_backend(group[0])
        try:
            backend.load()
        except Exception as exc:  # onnxruntime and openvino raise their own types  # noqa: BLE001
            return dict.fromkeys(group, Measurement(note=f"failed to load: {str(exc).splitlines()[0][:200]}"))
        load_ms = (self.clock() - started) * 1000
        try:
            backend.infer(synthetic_inputs(backend.signature, 1, self.shapes, self.preprocessing))
        except MCPError as exc:
            backend.unload()
            return dict.fromkeys(group, Measurement(note=f"failed at batch 1: {exc}"))
        sizes = sorted({candidate.plan.max_batch_size for candidate in group})
        session = _Session(group, backend, load_ms, meter.peak_mb(), sizes)
        if group[0].plan.inference_precision in INFERENCE_PRECISIONS:
            try:
                session.drift = self._drift_against_fp32(group[0], backend)
            except Exception as exc:  # noqa: BLE001 - the reference's runtime raises its own types
                backend.unload()
                return dict.fromkeys(group, Measurement(note=f"drift not measured: {str(exc).splitlines()[0][:200]}"))
        return session

    def _drift_against_fp32(self, candidate: Candidate, backend: Backend) -> float:
        """Worst relative L2 drift of ``backend``'s outputs against FP32 onnxruntime on the same inputs."""
        signature = self.signature_for(candidate.variant)
        inputs = [synthetic_inputs(signature, 1, self.shapes, self.preprocessing, seed=s) for s in range(DRIFT_SAMPLES)]
        digest = candidate.variant.digest
        if digest not in self._fp32_outputs:
            reference = self.backend_factory(self.model_path(candidate.variant), signature, Plan())
            reference.load()
            try:
                self._fp32_outputs[digest] = [reference.infer(feed) for feed in inputs]
            finally:
                reference.unload()
        pairs = zip(self._fp32_outputs[digest], inputs, strict=True)
        return round(max(compare(fp32, backend.infer(feed)).rel_l2 for fp32, feed in pairs), 6)

    def _rounds(self, sessions: list[_Session], deadline: float) -> None:
        """Interleaved rounds: every session once per round; the first round times them all."""
        rounds = self.budget.rounds
        for index in range(rounds):
            for position, session in enumerate(sessions):
                now = self.clock()
                if index > 0 and now > deadline:
                    return
                left = (rounds - index) * len(sessions) - position
                share_ends = now + max(0.0, deadline - now) / left
                session.slots.append(self._slot(session, index, share_ends, first=index == 0))

    def _slot(
        self, session: _Session, index: int, share_ends: float, first: bool, sizes: Sequence[int] | None = None
    ) -> Slot:
        """Time one session for one round: batch 1, then each batch size still wanted, ascending."""
        mark = self.load_meter.mark()
        meter = MemoryMeter()
        if first:
            meter.start()
        budget, rounds = self.budget, self.budget.rounds
        phase_s = budget.seconds_per_plan / 2 / rounds
        warmup = budget.warmup_runs if first else min(1, budget.warmup_runs)
        slot = Slot(round=index)
        single_runs, least = self._share(budget.latency_runs, index), self._share(budget.min_runs, index)
        slot.single = self._time_runs(session.backend, 1, single_runs, least, phase_s, share_ends, warmup)
        slowest_ms = _ms(np.percentile(slot.single, 99)) if slot.single else 0.0
        for size in session.timed_sizes() if sizes is None else sizes:
            skip = self._skip_reason(slowest_ms, share_ends)
            if skip is not None:
                if first:
                    session.notes.update(dict.fromkeys([s for s in session.timed_sizes() if s >= size], skip))
                break
            try:
                batch_runs = self._share(budget.batch_runs, index)
                runs = self._time_runs(session.backend, size, batch_runs, least, phase_s, share_ends, warmup)
            except MCPError as exc:
                session.notes[size] = f"failed at batch {size}: {exc}"
                continue
            if runs:
                slot.batches[size] = runs
            slowest_ms = max(slowest_ms, _ms(np.percentile(runs, 99)) if runs else 0.0)
        instances = session.backend.plan.instances
        if instances > 1:
            busy_runs = self._share(budget.batch_runs, index)
            for size in [1, *slot.batches] if busy_runs else []:
                try:
                    slot.busy[size] = self._time_busy(session.backend, size, instances, busy_runs, phase_s, share_ends)
                except MCPError as exc:
                    session.notes[size] = f"failed at batch {size} with {instances} instances busy: {exc}"
        slot.load = self.load_meter.since(mark)
        if first and session.memory_mb is not None:
            session.memory_mb = round(session.memory_mb + (meter.peak_mb() or 0.0), 2)
        return slot

    def _retake_loaded(self, sessions: list[_Session], deadline: float) -> None:
        """Measure again, once the machine is quiet, every slot taken under heavy outside load."""
        loaded = [
            (session, position)
            for session in sessions
            for position, slot in enumerate(session.slots)
            if (slot.load.outside_cores or 0.0) > self.heavy_cores
        ]
        for done, (session, position) in enumerate(loaded):
            if not self._wait_for_quiet(deadline):
                return
            old = session.slots[position]
            now = self.clock()
            share_ends = now + max(0.0, deadline - now) / (len(loaded) - done)
            sizes = [size for size in old.batches if size not in session.notes]
            fresh = self._slot(session, old.round, share_ends, first=False, sizes=sizes)
            fresh.remeasured = True
            session.slots[position] = fresh

    def _wait_for_quiet(self, deadline: float) -> bool:
        """Whether the outside load fell to the threshold or below before the wait (or the budget) ran out."""
        until = min(deadline, self.clock() + self.budget.quiet_wait_s)
        while True:
            mark = self.load_meter.mark()
            self.sleep(self.budget.quiet_probe_s)
            outside = self.load_meter.since(mark).outside_cores
            if outside is None or outside <= self.heavy_cores:
                return True
            if self.clock() >= until:
                return False

    def _results(self, session: _Session) -> dict[Candidate, Measurement]:
        results: dict[Candidate, Measurement] = {}
        for candidate in session.group:
            size = candidate.plan.max_batch_size
            note = session.notes.get(size)
            figures = (
                None
                if note
                else robust_figures(
                    session.slots,
                    size,
                    session.memory_mb,
                    session.load_ms,
                    self.heavy_cores,
                    instances=candidate.plan.instances,
                )
            )
            if figures is None:
                note = note or "not measured: this session's share of the planning budget was spent"
                results[candidate] = Measurement(note=note)
            else:
                figures = figures.model_copy(update={"drift": session.drift})
                results[candidate] = Measurement(figures=figures, note=self._load_note(figures))
        return results

    def _load_note(self, figures: Figures) -> str:
        retaken, loaded, total = figures.remeasured_rounds, figures.loaded_rounds, len(figures.rounds)
        limit = f"{self.heavy_cores:g}"
        if loaded:
            return (
                f"{loaded} of {total} rounds measured under outside load above {limit} cores "
                f"(not quiet within {self.budget.quiet_wait_s:g} s)"
            )
        if retaken:
            return (
                f"{retaken} of {total} rounds re-measured once the machine was quiet (outside load above {limit} cores)"
            )
        return ""

    def _skip_reason(self, slowest_ms: float, share_ends: float) -> str | None:
        """Why the next (larger) batch size is not measured, or None to measure it."""
        limit = self.latency_limit_ms
        if limit is not None and slowest_ms > limit:
            return f"not measured: a smaller batch already took {slowest_ms:g} ms (p99 budget {limit:g} ms)"
        if self.clock() > share_ends:
            return "not measured: this session's share of the planning budget was spent"
        return None

    def _share(self, total: int, index: int) -> int:
        """Round ``index``'s part of ``total`` runs (the first rounds take the remainder; round 0 at least 1)."""
        rounds = self.budget.rounds
        part = total // rounds + (1 if index < total % rounds else 0)
        return max(part, 1) if index == 0 else part

    def _time_runs(
        self, backend: Backend, batch: int, max_runs: int, least: int, seconds: float, hard_stop: float, warmup: int
    ) -> list[float]:
        """Time up to ``max_runs`` runs for about ``seconds`` (at least ``least`` unless that would run past
        ``hard_stop``; at least one unless ``max_runs`` is 0)."""
        if max_runs == 0:
            return []
        inputs = synthetic_inputs(backend.signature, batch, self.shapes, self.preprocessing)
        for _ in range(warmup):
            backend.infer(inputs)
            if self.clock() > hard_stop:
                break
        times: list[float] = []
        stop = self.clock() + seconds
        while len(times) < max_runs and (len(times) < max(least, 1) or self.clock() < stop):
            if times and self.clock() > hard_stop:
                break
            started = self.clock()
            backend.infer(inputs)
            times.append(self.clock() - started)
        return times

    def _time_busy(
        self, backend: Backend, batch: int, instances: int, max_runs: int, seconds: float, hard_stop: float
    ) -> list[float]:
        """Run ``instances`` threads at once, each timing up to ``max_runs`` batches of ``batch`` rows back to
        back for about ``seconds`` (at least one run each): the run times of a plan whose instances are all
        busy."""
        inputs = synthetic_inputs(backend.signature, batch, self.shapes, self.preprocessing)
        stop = min(self.clock() + seconds, hard_stop)
        start = threading.Barrier(instances)
        times: list[list[float]] = [[] for _ in range(instances)]

        def instance(own: list[float]) -> None:
            start.wait()
            while len(own) < max_runs and (not own or self.clock() < stop):
                began = self.clock()
                backend.infer(inputs)
                own.append(self.clock() - began)

        with ThreadPoolExecutor(max_workers=instances, thread_name_prefix="mcp-profile") as pool:
            for running in [pool.submit(instance, own) for own in times]:
                running.result()  # an instance's failure is the plan's: raised here, not lost in its thread
        return [run for own in times for run in own]


def _ms(seconds: float) -> float:
    return round(float(seconds) * 1000, 3)
