"""The split of a pipeline's contract between its model steps (pure), and a pipeline planned step by step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract, LatencySpec, SLAClass
from mcp2026ai.policy.candidates import Candidate
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.pipelines import (
    HOP_RESERVE,
    PYTHON_RESERVE,
    STEP_FLOOR_SHARE,
    latency_budgets,
    plan_pipeline,
    plan_step,
    shares,
    step_contract,
    store_pipeline_plan,
    stored_pipeline_plan,
    with_step_shapes,
)
from mcp2026ai.policy.profiler import Measurement, ProfileBudget
from mcp2026ai.policy.synthetic import SyntheticShapes
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.pipelines import register_pipeline
from mcp2026ai.runtime.python_code import check_python_source
from support.pipelines import write_pipeline


@pytest.mark.parametrize(
    ("costs", "cores", "expected"),
    [
        ({"det": 8.0, "cls": 1.0, "rec": 3.0}, 2, {"det": 2, "cls": 1, "rec": 1}),
        ({"det": 8.0, "cls": 1.0, "rec": 3.0}, 8, {"det": 6, "cls": 1, "rec": 2}),
        ({"det": 1000.0, "cls": 5.0, "rec": 150.0}, 2, {"det": 2, "cls": 1, "rec": 1}),
        ({"a": 1.0, "b": 1.0}, 4, {"a": 2, "b": 2}),
        ({"a": 1.0, "b": 1.0, "c": 1.0}, 2, {"a": 1, "b": 1, "c": 1}),
        ({"a": 1.1, "b": 0.9}, 2, {"a": 1, "b": 1}),  # equal steps measured apart: not two and one
        ({"a": 1.0}, 2, {"a": 2}),
    ],
)
def test_cores_follow_cost_rounded_up_with_one_each_at_least(
    costs: dict[str, float], cores: int, expected: dict[str, int]
) -> None:
    assert shares(costs, cores) == expected


def test_a_steps_example_shapes_override_the_synthetic_ones() -> None:
    shapes = SyntheticShapes(default_dim=16, overrides={"ids": [1, 8]})
    own = with_step_shapes(shapes, {"x": [1, 3, 736, 736]})
    assert own.overrides == {"ids": [1, 8], "x": [1, 3, 736, 736]} and own.default_dim == 16
    assert with_step_shapes(shapes, {}) == shapes


def test_the_latency_budget_is_split_by_cost_after_a_reserve() -> None:
    contract = InferenceContract(latency=LatencySpec(p99_ms=100))
    with_python = latency_budgets(contract, {"a": 3.0, "b": 1.0}, has_python=True)
    assert with_python == pytest.approx({"a": 75 * (1 - PYTHON_RESERVE), "b": 25 * (1 - PYTHON_RESERVE)})
    assert sum(latency_budgets(contract, {"a": 1.0}, has_python=False).values()) == pytest.approx(
        100 - 100 * HOP_RESERVE
    )


def test_a_cheap_step_gets_a_floor_of_the_budget_taken_from_the_others() -> None:
    contract = InferenceContract(latency=LatencySpec(p99_ms=3000))
    budgets = latency_budgets(contract, {"det": 1000.0, "cls": 5.0, "rec": 150.0}, has_python=True)
    available = 3000 * (1 - PYTHON_RESERVE)
    assert budgets["cls"] == pytest.approx(available * STEP_FLOOR_SHARE)
    assert sum(budgets.values()) == pytest.approx(available)
    assert budgets["det"] / budgets["rec"] == pytest.approx(1000 / 150)


def test_a_step_keeps_the_pipelines_class_and_floors() -> None:
    contract = InferenceContract(sla_class=SLAClass.LATENCY_CRITICAL, latency=LatencySpec(p99_ms=100, p95_ms=50))
    derived = step_contract(contract, 40)
    assert (derived.sla_class, derived.latency.p99_ms, derived.latency.p95_ms) == (SLAClass.LATENCY_CRITICAL, 40, 20)
    assert derived.throughput == contract.throughput and derived.precision == contract.precision


@pytest.mark.slow
def test_each_model_step_is_planned_and_stored(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    record = register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    budget = ProfileBudget(seconds_per_plan=0.1, total_seconds=2)
    planned = plan_pipeline(registry, record, budget)
    assert [step.step for step in planned.steps] == ["double", "shift"]
    assert planned.python_steps == ["parse", "join"]
    for step in planned.steps:
        assert step.cores >= 1 and step.plan != "none" and step.expected_p99_ms is not None
        assert step.p99_budget_ms < 200
        name, version = step.model.split(":")
        stored = PolicyOrchestrator(registry).stored(registry.resolve(name, version))
        assert stored is not None and stored.decision_id == step.decision_id  # the single-model policy's plan
    store_pipeline_plan(registry, record, planned)
    assert stored_pipeline_plan(registry, record) == planned


@pytest.mark.slow
def test_a_step_without_a_plan_in_its_share_is_judged_again_on_the_same_measurements(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    step = registry.resolve("calc.double")
    orchestrator = PolicyOrchestrator(registry, budget=ProfileBudget(seconds_per_plan=0.1, total_seconds=2))
    profile, calls = orchestrator.measurer, []

    def counting(version: ModelVersion, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        calls.append(len(candidates))
        return profile(version, candidates)

    orchestrator.measurer = counting
    contract = InferenceContract(latency=LatencySpec(p99_ms=200))
    decision, note = plan_step(orchestrator, step, contract, share_ms=1e-6, available_ms=190, trigger="manual")
    assert decision.chosen is not None and decision.contract.latency.p99_ms == 190
    assert note == "no plan within its share (1e-06 ms): planned against all model steps' 190 ms"
    assert len(calls) == 1  # measured once; the relaxed contract judged the same figures

    decision, note = plan_step(orchestrator, step, contract, share_ms=60, available_ms=190, trigger="manual")
    assert note == "" and decision.contract.latency.p99_ms == 60
