from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.profiler import Figures, Measurement
from mcp2026ai.policy.records import Decision, StoredPlan
from mcp2026ai.policy.selection import evaluate_all, select_plan
from mcp2026ai.policy.trace import DecisionLog, parse_duration
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.plan import Plan

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _decision(at: datetime, threads: int = 1, version: str = "1.0.0") -> Decision:
    contract = InferenceContract()
    candidate = Candidate(plan=Plan(intra_op_threads=threads), variant=Variant(version=version, digest="d", drift=0.0))
    figures = Figures(p50_ms=1, p95_ms=2, p99_ms=3, batch_p95_ms=2, batch_p99_ms=3, throughput_rps=900, memory_mb=5)
    evaluations = evaluate_all(contract, [candidate], {candidate: Measurement(figures=figures)})
    chosen = select_plan(contract, evaluations)
    return Decision(
        model="m",
        version=version,
        time=at,
        trigger="register",
        contract=contract,
        evaluations=evaluations,
        chosen=chosen,
        reason="r",
    )


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("2d", 172800), ("1.5h", 5400), ("1w", 604800)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["5", "5x", "", "-5m", "0m", "m"])
def test_parse_duration_errors_name_the_value(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"--last {text!r}: expected a positive duration"):
        parse_duration(text)


def test_decisions_round_trip_and_filter_by_time(registry: ModelRegistry, mlp_path: Path) -> None:
    registry.register("m", mlp_path)
    log = DecisionLog(registry.catalog)
    old, recent = _decision(T0), _decision(T0 + timedelta(minutes=10), threads=2)
    log.record(old)
    log.record(recent)
    assert log.decisions("m") == [old, recent]
    assert log.decisions("m", since=T0 + timedelta(minutes=5)) == [recent]
    assert log.last_decision("m", "1.0.0") == recent
    assert log.decisions("m", version="9.9.9") == []


def test_stored_plan_is_the_latest(registry: ModelRegistry, mlp_path: Path) -> None:
    registry.register("m", mlp_path)
    log = DecisionLog(registry.catalog)
    assert log.current_plan("m", "1.0.0") is None
    first, second = _decision(T0), _decision(T0 + timedelta(seconds=1), threads=2)
    log.store_plan("m", "1.0.0", StoredPlan.from_decision(first))
    log.store_plan("m", "1.0.0", StoredPlan.from_decision(second, "/cache/x.onnx"))
    stored = log.current_plan("m", "1.0.0")
    assert stored is not None
    assert stored.plan.intra_op_threads == 2 and stored.decision_id == second.id
    assert stored.optimized_model == "/cache/x.onnx"
    rows = registry.catalog.annotations("m", "plan")
    assert len(rows) == 2 and rows[-1][2]["plan"]["intra_op_threads"] == 2


def test_a_decision_without_a_choice_cannot_become_a_stored_plan() -> None:
    decision = _decision(T0).model_copy(update={"chosen": None})
    with pytest.raises(ValueError, match="chose no plan"):
        StoredPlan.from_decision(decision)


def test_recording_a_decision_counts_it_by_trigger_and_outcome(registry: ModelRegistry, mlp_path: Path) -> None:
    from mcp2026ai.observability.metrics import REGISTRY

    registry.register("m", mlp_path)
    labels = {"model": "m", "trigger": "register", "outcome": "chosen"}
    before = REGISTRY.get_sample_value("mcp_policy_decisions_total", labels) or 0.0
    DecisionLog(registry.catalog).record(_decision(T0))
    assert REGISTRY.get_sample_value("mcp_policy_decisions_total", labels) == before + 1
