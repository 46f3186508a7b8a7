"""The orchestrator end to end: real measurement on a tiny model, injected measurements for hardware shapes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.policy.profiler import Figures, Measurement, ProfileBudget
from mcp2026ai.policy.selection import NoFeasiblePlanError
from mcp2026ai.quantization.verification_store import Verification, record_verification
from mcp2026ai.registry import ModelRegistry, ModelVersion

from .support import write_mlp

TIGHT = ProfileBudget(
    seconds_per_plan=0.02, latency_runs=8, batch_runs=4, warmup_runs=1, min_runs=2, total_seconds=10, heavy_load=1.0
)
FOUR_CORES = HardwareProfile(
    cpu_model="model-4", logical_cores=4, online_cpus=4, ort_providers=["CPUExecutionProvider"]
)


def _contract(**document: object) -> InferenceContract:
    return InferenceContract.model_validate(document)


class ScalingMeasurer:
    """Figures of a machine where latency falls with threads and batches amortize 4 ms of overhead."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, record: ModelVersion, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        self.calls += 1
        return {c: self._figures(c.plan.intra_op_threads, c.plan.max_batch_size) for c in candidates}

    @staticmethod
    def _figures(threads: int, batch: int) -> Measurement:
        single = 4.0 + 8.0 / threads
        batch_ms = 4.0 + 8.0 * batch / threads
        return Measurement(
            figures=Figures(
                p50_ms=single * 0.8,
                p95_ms=single * 0.95,
                p99_ms=single,
                batch_p95_ms=batch_ms * 0.95,
                batch_p99_ms=batch_ms,
                throughput_rps=round(1000 * batch / batch_ms, 1),
                memory_mb=10.0 + batch,
            )
        )


def _orchestrator(registry: ModelRegistry, measurer: ScalingMeasurer | None = None) -> PolicyOrchestrator:
    return PolicyOrchestrator(registry, hardware=FOUR_CORES, budget=TIGHT, measurer=measurer)


def test_only_more_threads_meets_the_p99(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path, contract=_contract(latency={"p99_ms": 7}, objective="memory"))
    decision = _orchestrator(registry, ScalingMeasurer()).plan_for(record, "register")
    assert decision.chosen is not None
    # p99 = 4 + 8/threads: 12 ms at 1 thread, 8 at 2, 6 at 4 -> only 4 threads keeps 7 ms
    assert (decision.chosen.plan.intra_op_threads, decision.chosen.plan.max_batch_size) == (4, 1)


def test_only_a_batched_plan_meets_the_throughput_floor(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = _contract(
        latency={"p99_ms": 50}, throughput={"min_rps": 300}, batching={"max_batch_size": 8, "max_queue_delay_ms": 2}
    )
    record = registry.register("mlp", mlp_path, contract=contract)
    decision = _orchestrator(registry, ScalingMeasurer()).plan_for(record, "register")
    chosen = decision.chosen
    assert chosen is not None and chosen.plan.max_batch_size > 1
    assert chosen.figures is not None and chosen.figures.throughput_rps >= 300
    unbatched = [e for e in decision.evaluations if e.plan.max_batch_size == 1]
    assert unbatched and not any(e.feasible for e in unbatched)  # batch 1 tops out at 1000/6 rows/s
    assert chosen.plan.max_queue_delay_ms == 0  # latency objective: work-conserving, no added delay


def test_impossible_contract_fails_naming_the_nearest_plan_and_is_traced(
    registry: ModelRegistry, mlp_path: Path
) -> None:
    record = registry.register(
        "mlp", mlp_path, contract=_contract(latency={"p99_ms": 1}, batching={"max_batch_size": 1})
    )
    orchestrator = _orchestrator(registry, ScalingMeasurer())
    with pytest.raises(NoFeasiblePlanError) as caught:
        orchestrator.plan_for(record, "register")
    message = str(caught.value)
    assert "no plan meets the contract of mlp:1.0.0" in message
    assert "nearest: cpu/fp32 threads=4 batch<=1" in message
    assert "latency.p99_ms by 5 ms (6 > 1)" in message
    assert orchestrator.stored(record) is None
    [decision] = orchestrator.decisions("mlp")
    assert decision.chosen is None and decision.reason == message


def test_real_planning_end_to_end_and_reuse_across_restarts(tmp_path: Path, mlp_path: Path) -> None:
    home = tmp_path / "home"
    contract = _contract(latency={"p99_ms": 1000}, batching={"max_batch_size": 4}, resources={"memory_mb": 512})
    record = ModelRegistry(home).register("mlp", mlp_path, contract=contract)
    first = PolicyOrchestrator(ModelRegistry(home), budget=TIGHT)
    decision = first.plan_for(record, "register")
    assert decision.chosen is not None and decision.feasible_count == len(decision.evaluations)
    assert all(e.figures is not None and e.figures.p99_ms > 0 for e in decision.evaluations)
    stored = first.stored(record)
    assert stored is not None and stored.plan == decision.chosen.plan
    assert stored.optimized_model is not None
    cached = Path(stored.optimized_model)
    assert cached.exists() and cached.parent == home / "cache" and cached.name.startswith(record.digest)
    written_at = cached.stat().st_mtime_ns

    # "restart": new registry and orchestrator objects on the same home
    counting = CountingMeasurer()
    second = PolicyOrchestrator(ModelRegistry(home), budget=TIGHT, measurer=counting)
    assert second.stored_plan(record) == decision.chosen.plan
    assert second.ensure_plan(record).decision_id == decision.id
    backend = second.backend_for(record)
    assert backend.model_path == cached  # loads the cached optimized graph
    backend.load()
    x = np.ones((3, 32), dtype=np.float32)
    assert backend.infer({"x": x})["y"].shape == (3, 4)
    assert counting.calls == 0 and cached.stat().st_mtime_ns == written_at
    assert len(second.decisions("mlp")) == 1


def test_stored_plan_from_other_hardware_is_replanned(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path, contract=_contract(batching={"max_batch_size": 1}))
    measurer = ScalingMeasurer()
    _orchestrator(registry, measurer).plan_for(record, "register")
    other = FOUR_CORES.model_copy(update={"cpu_model": "another CPU"})
    moved = PolicyOrchestrator(registry, hardware=other, budget=TIGHT, measurer=measurer)
    stored = moved.ensure_plan(record)
    assert measurer.calls == 2 and stored.trigger == "serve"
    assert stored.hardware_fingerprint == other.fingerprint()


def test_model_without_contract_is_planned_unconstrained(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path)
    decision = _orchestrator(registry, ScalingMeasurer()).plan_for(record)
    assert decision.chosen is not None and decision.chosen.plan.intra_op_threads == 4
    assert decision.reason.startswith("no contract")
    assert {e.plan.max_batch_size for e in decision.evaluations} == {1}


def test_replan_switches_and_stores_the_new_plan(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register(
        "mlp", mlp_path, contract=_contract(latency={"p99_ms": 9}, batching={"max_batch_size": 1})
    )
    orchestrator = _orchestrator(registry, ScalingMeasurer())
    orchestrator.plan_for(record, "register")
    assert orchestrator.stored_plan(record) is not None
    assert orchestrator.stored_plan(record).intra_op_threads == 4  # type: ignore[union-attr]
    swapped = []
    monitor = orchestrator.monitor(record, swapped.append)
    for _ in range(monitor.policy.consecutive_windows):
        decision = monitor.observe(20.0)
    assert decision is not None and swapped == [decision]
    assert decision.chosen is not None and decision.chosen.plan.intra_op_threads == 2  # 8 ms: next best
    assert orchestrator.stored_plan(record) == decision.chosen.plan
    assert [d.trigger for d in orchestrator.decisions("mlp")] == ["register", "replan"]


class CountingMeasurer(ScalingMeasurer):
    pass


def test_precision_the_contract_forbids_is_not_measured(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("mlp", mlp_path, contract=_contract(precision={"allowed": ["int8"]}))
    measurer = ScalingMeasurer()
    with pytest.raises(NoFeasiblePlanError, match=r"misses precision\.allowed \(fp32 not in \[int8\]\)"):
        _orchestrator(registry, measurer).plan_for(record)
    assert measurer.calls == 0


def test_injected_variant_lookup_adds_measured_quantized_candidates(
    registry: ModelRegistry, mlp_path: Path, tmp_path: Path
) -> None:
    contract = _contract(precision={"allowed": ["fp32", "int8"]}, batching={"max_batch_size": 1}, objective="memory")
    record = registry.register("mlp", mlp_path, contract=contract)
    child = registry.register("mlp", write_mlp(tmp_path / "int8.onnx", seed=1), parent=record.version)

    def lookup(parent: ModelVersion, wanted: InferenceContract) -> list[Variant]:
        assert parent == record and wanted == contract
        return [Variant(version=child.version, digest=child.digest, precision=Precision.INT8, drift=0.001)]

    one_core = FOUR_CORES.model_copy(update={"logical_cores": 1})
    orchestrator = PolicyOrchestrator(registry, hardware=one_core, budget=TIGHT, variants=lookup)
    decision = orchestrator.plan_for(record)
    assert [(e.plan.precision, e.candidate.variant.version) for e in decision.evaluations] == [
        (Precision.FP32, record.version),
        (Precision.INT8, child.version),
    ]
    assert all(e.figures is not None for e in decision.evaluations)  # both artifacts really ran
    chosen = decision.chosen
    assert chosen is not None
    backend = orchestrator.backend_for(record)
    assert backend.model_path.name.startswith(chosen.candidate.variant.digest)  # the chosen variant's artifact
    backend.load()
    assert backend.infer({"x": np.ones((1, 32), dtype=np.float32)})["y"].shape == (1, 4)


def test_verified_fp16_child_with_fp16_inputs_is_measured_with_its_own_signature(
    registry: ModelRegistry, mlp_path: Path, tmp_path: Path
) -> None:
    contract = _contract(precision={"allowed": ["fp32", "fp16"]}, batching={"max_batch_size": 2})
    record = registry.register("mlp", mlp_path, contract=contract)
    child = registry.register(
        "mlp-fp16", write_mlp(tmp_path / "fp16.onnx", fp16=True), parent=record.ref, tags={"precision": "fp16"}
    )
    passed = Verification(baseline=record.version, precision="fp16", rel_l2=0.002, tolerance=0.01, passed=True)
    record_verification(registry, child.name, child.version, passed, child.created_at)
    one_core = FOUR_CORES.model_copy(update={"logical_cores": 1})
    orchestrator = PolicyOrchestrator(registry, hardware=one_core, budget=TIGHT)  # default lookup: the registry
    decision = orchestrator.plan_for(record)
    fp16 = [e for e in decision.evaluations if e.plan.precision is Precision.FP16]
    assert [e.plan.max_batch_size for e in fp16] == [1, 2]
    assert all(e.figures is not None and e.feasible for e in fp16), [e.note for e in fp16]
    assert fp16[0].candidate.variant.name == "mlp-fp16"
    assert orchestrator.variant_signature(record, fp16[0].candidate.variant).inputs[0].datatype == "FP16"
