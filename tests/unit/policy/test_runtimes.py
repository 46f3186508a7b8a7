"""OpenVINO beside onnxruntime: candidates of both runtimes, measured together, the faster one chosen."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract
from mcp2026ai.policy.candidates import enumerate_candidates
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.policy.profiler import Figures, Measurement, ProfileBudget
from mcp2026ai.policy.selection import evaluate_all, select_plan
from mcp2026ai.registry import ModelRegistry

from .support import write_mlp

BOTH = HardwareProfile(
    cpu_model="t",
    logical_cores=2,
    online_cpus=2,
    ort_providers=["CPUExecutionProvider"],
    runtimes=["onnxruntime", "openvino"],
)
TIGHT = ProfileBudget(
    seconds_per_plan=0.02, latency_runs=8, batch_runs=4, warmup_runs=1, min_runs=2, total_seconds=20, heavy_load=1.0
)


def contract(**document: object) -> InferenceContract:
    return InferenceContract.model_validate(document)


def test_openvino_candidates_beside_onnxruntime(registry: ModelRegistry, mlp_path: Path) -> None:
    latency = contract(batching={"max_batch_size": 2})
    record = registry.register("mlp", mlp_path, contract=latency)
    plans = [c.plan for c in enumerate_candidates(record, latency, BOTH, [])]
    sessions = {(p.runtime, p.intra_op_threads, p.performance_hint, p.streams, p.instances) for p in plans}
    assert sessions == {
        ("onnxruntime", 1, None, 0, 1),
        ("onnxruntime", 2, None, 0, 1),
        ("onnxruntime", 1, None, 0, 2),  # the two cores as two single-threaded instances
        ("openvino", 1, "LATENCY", 1, 1),
        ("openvino", 2, "LATENCY", 1, 1),
        ("openvino", 1, "THROUGHPUT", 2, 2),  # one stream per instance
    }
    forced = enumerate_candidates(record, latency, BOTH, [], runtime="openvino")
    assert forced and {c.plan.runtime for c in forced} == {"openvino"}
    single = [c for c in forced if c.plan.intra_op_threads == 1 and c.plan.instances == 1]
    assert {c.session_key() for c in single} == {forced[0].session_key()}


def test_the_faster_runtime_wins(registry: ModelRegistry, mlp_path: Path) -> None:
    c = contract(latency={"p99_ms": 50}, batching={"max_batch_size": 1})
    record = registry.register("mlp", mlp_path, contract=c)
    candidates = enumerate_candidates(record, c, BOTH, [])

    def figures(p50: float) -> Measurement:
        return Measurement(
            figures=Figures(
                min_ms=p50 * 0.9, p50_ms=p50, p95_ms=p50 * 1.2, p99_ms=p50 * 1.5,
                batch_p95_ms=p50 * 1.2, batch_p99_ms=p50 * 1.5, throughput_rps=1000 / p50,
            )
        )  # fmt: skip

    table = {cand: figures(3.0 if cand.plan.runtime == "openvino" else 5.0) for cand in candidates}
    chosen = select_plan(c, evaluate_all(c, candidates, table))
    assert chosen is not None and chosen.plan.runtime == "openvino" and chosen.plan.intra_op_threads == 1
    table = {cand: figures(5.0 if cand.plan.runtime == "openvino" else 3.0) for cand in candidates}
    chosen = select_plan(c, evaluate_all(c, candidates, table))
    assert chosen is not None and chosen.plan.runtime == "onnxruntime"


def test_both_runtimes_measured_and_traced(registry: ModelRegistry, tmp_path: Path) -> None:
    pytest.importorskip("openvino", reason="the [openvino] extra")
    record = registry.register("mlp", write_mlp(tmp_path / "m.onnx"), contract=contract(batching={"max_batch_size": 2}))
    orchestrator = PolicyOrchestrator(registry, hardware=BOTH, budget=TIGHT)
    decision = orchestrator.plan_for(record, "manual")
    measured = {e.plan.runtime for e in decision.evaluations if e.figures is not None}
    assert measured == {"onnxruntime", "openvino"}
    [traced] = orchestrator.decisions("mlp")
    assert {e.plan.runtime for e in traced.evaluations if e.figures and e.figures.rounds} == measured
    forced = PolicyOrchestrator(registry, hardware=BOTH, budget=TIGHT, runtime="openvino")
    stored = forced.ensure_plan(record)
    assert stored.plan.runtime == "openvino"
    backend = forced.backend_for(record, stored)
    assert backend.platform == "openvino"
