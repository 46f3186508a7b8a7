"""Real measurement of a tiny generated model with onnxruntime, under a tight budget."""

from __future__ import annotations

import mmap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import InferenceFailedError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.policy.candidates import Candidate, Variant, enumerate_candidates
from mcp2026ai.policy.memory import MemoryMeter
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.policy.profiler import ProfileBudget, Profiler, group_by_session
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.base import Backend, Tensors
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import Plan

from .support import write_batch_one_only

TIGHT = ProfileBudget(
    seconds_per_plan=0.02, latency_runs=8, batch_runs=4, warmup_runs=1, min_runs=2, total_seconds=10, heavy_load=1.0
)  # heavy_load 1: no slot is retaken (the outside load of a shared test machine is not under test here)
TWO_CORES = HardwareProfile(cpu_model="t", logical_cores=2, online_cpus=2, ort_providers=["CPUExecutionProvider"])


def _candidates(registry: ModelRegistry, mlp_path: Path) -> tuple[Profiler, list[Candidate]]:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 4}})
    record = registry.register("mlp", mlp_path, contract=contract)
    candidates = enumerate_candidates(record, contract, TWO_CORES, [])
    profiler = Profiler(lambda v: registry.store.path_for(v.digest), record.signature, TIGHT)
    return profiler, candidates


def test_candidates_differing_only_in_batch_share_a_session() -> None:
    variant = Variant(version="1", digest="d")
    candidates = [
        Candidate(plan=Plan(intra_op_threads=t, max_batch_size=b), variant=variant) for t in (1, 2) for b in (1, 4)
    ]
    assert [[c.plan.max_batch_size for c in g] for g in group_by_session(candidates)] == [[1, 4], [1, 4]]


def test_profiler_measures_every_candidate_within_bounds(registry: ModelRegistry, mlp_path: Path) -> None:
    profiler, candidates = _candidates(registry, mlp_path)
    results = profiler(candidates)
    assert set(results) == set(candidates)
    for candidate, measurement in results.items():
        figures = measurement.figures
        assert figures is not None, measurement.note
        assert figures.min_ms is not None
        assert 0 < figures.min_ms <= figures.p50_ms <= figures.p95_ms <= figures.p99_ms
        assert figures.batch_p99_ms > 0 and figures.throughput_rps > 0
        assert figures.memory_mb is not None and figures.memory_mb >= 0
        assert figures.load_ms > 0
        instances = candidate.plan.instances  # several: each size timed with all of them busy
        timed_batch = 0 if candidate.plan.max_batch_size == 1 else TIGHT.batch_runs
        timed_batch = timed_batch if instances == 1 else TIGHT.batch_runs * instances
        assert TIGHT.min_runs <= figures.runs <= TIGHT.latency_runs + timed_batch
    same_session = [results[c].figures for c in candidates if (c.plan.intra_op_threads, c.plan.instances) == (1, 1)]
    assert len({f.p99_ms for f in same_session if f}) == 1  # batch-1 latency measured once per session


def test_total_budget_leaves_later_sessions_unmeasured(registry: ModelRegistry, mlp_path: Path) -> None:
    profiler, candidates = _candidates(registry, mlp_path)
    ticks: Iterator[float] = iter(float(i) for i in range(10_000))
    profiler.clock = lambda: next(ticks)  # every reading advances one "second"
    profiler.budget = TIGHT.model_copy(update={"total_seconds": 3})
    results = profiler(candidates)
    notes = {c.plan.intra_op_threads: results[c].note for c in candidates}
    assert results[candidates[0]].figures is not None
    assert notes[2] == "not measured: planning budget of 3 s spent"


def test_every_session_gets_a_fair_share_of_the_budget(registry: ModelRegistry, mlp_path: Path) -> None:
    """A slow first session (every clock reading is one "second") must not starve the second one."""
    profiler, candidates = _candidates(registry, mlp_path)
    ticks: Iterator[float] = iter(float(i) for i in range(10_000))
    profiler.clock = lambda: next(ticks)
    profiler.budget = TIGHT.model_copy(update={"total_seconds": 40})
    results = profiler(candidates)
    for threads in (1, 2):
        mine = [c for c in candidates if c.plan.intra_op_threads == threads]
        assert results[mine[0]].figures is not None, results[mine[0]].note  # batch 1: always measured
        notes = {results[c].note for c in mine[1:] if results[c].figures is None}
        assert notes <= {"not measured: this session's share of the planning budget was spent"}


def test_larger_batches_are_skipped_once_one_exceeds_the_latency_budget(
    registry: ModelRegistry, mlp_path: Path
) -> None:
    profiler, candidates = _candidates(registry, mlp_path)
    profiler.latency_limit_ms = 1e-9  # every run is slower than this
    results = profiler(candidates)
    for candidate in candidates:
        measurement = results[candidate]
        if candidate.plan.max_batch_size == 1:
            assert measurement.figures is not None
        else:
            assert measurement.figures is None
            assert measurement.note.startswith("not measured: a smaller batch already took ")
            assert measurement.note.endswith("ms (p99 budget 1e-09 ms)")


def test_a_session_that_cannot_load_is_reported_not_raised(
    registry: ModelRegistry, mlp_path: Path, tmp_path: Path
) -> None:
    profiler, candidates = _candidates(registry, mlp_path)
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not onnx")
    profiler.model_path = lambda v: broken
    results = profiler(candidates[:1])
    assert results[candidates[0]].figures is None
    assert results[candidates[0]].note.startswith("failed to load:")


def test_memory_meter_sees_an_allocation() -> None:
    meter = MemoryMeter()
    meter.start()
    # fresh pages from the kernel, touched one by one: heap memory an earlier test freed could be reused
    # without the resident set growing (as in a long-lived pytest-xdist worker)
    with mmap.mmap(-1, 64 * 1024 * 1024) as block:
        for offset in range(0, len(block), mmap.PAGESIZE):
            block[offset] = 1
        peak = meter.peak_mb()
    assert peak is not None and peak >= 60
    unreadable = MemoryMeter(Path("/nonexistent"))
    unreadable.start()
    assert unreadable.peak_mb() is None


def test_a_batch_size_that_fails_spares_the_others(registry: ModelRegistry, tmp_path: Path) -> None:
    record = registry.register("one", write_batch_one_only(tmp_path / "one.onnx"))
    variant = Variant(version=record.version, digest=record.digest, drift=0.0)
    candidates = [Candidate(plan=Plan(intra_op_threads=1, max_batch_size=b), variant=variant) for b in (1, 2)]
    results = Profiler(lambda v: registry.store.path_for(v.digest), record.signature, TIGHT)(candidates)
    assert results[candidates[0]].figures is not None
    failed = results[candidates[1]]
    assert failed.figures is None and failed.note.startswith("failed at batch 2: onnxruntime failed")


class _ConcurrencyProbe:
    """Wraps real backends and records the most ``infer`` calls that ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def factory(self, model: Path | bytes, signature: Signature, plan: Plan, **kwargs: object) -> Backend:
        backend = create_backend(model, signature, plan)
        inner_infer = backend.infer

        def infer(inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
            try:
                time.sleep(0.002)  # long enough for the other instance's run to overlap
                return inner_infer(inputs, outputs)
            finally:
                with self.lock:
                    self.running -= 1

        backend.infer = infer  # type: ignore[method-assign]
        return backend


def test_a_multi_instance_plan_is_timed_with_every_instance_busy(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 1}})
    record = registry.register("mlp", mlp_path, contract=contract)
    variant = Variant(version=record.version, digest=record.digest)
    split = Candidate(plan=Plan(intra_op_threads=1, instances=2), variant=variant)
    probe = _ConcurrencyProbe()
    path = registry.store.path_for(record.digest)
    profiler = Profiler(lambda v: path, record.signature, TIGHT, backend_factory=probe.factory)
    figures = profiler([split])[split].figures
    assert figures is not None and probe.most == 2
    busy_ms = figures.batch_p50_ms
    assert busy_ms is not None and busy_ms >= 2.0
    assert figures.throughput_rps > 1000 / figures.p50_ms  # two rows at a time count, not one
    assert any(r.batch_p50_ms is not None for r in figures.rounds)


def test_a_plan_failing_with_its_instances_busy_is_reported_not_lost(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 1}})
    record = registry.register("mlp", mlp_path, contract=contract)
    split = Candidate(plan=Plan(intra_op_threads=1, instances=2), variant=Variant(version="1", digest=record.digest))
    probe = _ConcurrencyProbe()

    def factory(model: Path | bytes, signature: Signature, plan: Plan, **kwargs: object) -> Backend:
        backend = probe.factory(model, signature, plan)  # counts the runs in flight while each sleeps 2 ms
        counted = backend.infer

        def infer(inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
            with probe.lock:
                alone = probe.running == 0
            result = counted(inputs, outputs)
            if not alone:
                raise InferenceFailedError("not safe to run concurrently")
            return result

        backend.infer = infer  # type: ignore[method-assign]
        return backend

    path = registry.store.path_for(record.digest)
    measurement = Profiler(lambda v: path, record.signature, TIGHT, backend_factory=factory)([split])[split]
    assert measurement.figures is None
    assert "failed at batch 1 with 2 instances busy: not safe to run concurrently" in measurement.note
