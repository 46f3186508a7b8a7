"""``mcp policy explain`` of a pipeline: each constraint against the end-to-end figures at c=4, with by
how much it is met or missed (pure: built from a stored plan)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mcp2026ai.cli.policy_pipeline import contract_rows, step_row
from mcp2026ai.contract import InferenceContract, LatencySpec, ThroughputSpec
from mcp2026ai.policy.pipelines import EndToEnd, PipelinePlan, StepPlan

CONTRACT = InferenceContract(latency=LatencySpec(p99_ms=3000), throughput=ThroughputSpec(min_rps=2))


def planned(p99_ms: float | None, rps: float = 1.0) -> PipelinePlan:
    end_to_end = None
    if p99_ms is not None:
        end_to_end = EndToEnd(concurrency=4, requests=12, p50_ms=p99_ms / 2, p99_ms=p99_ms, throughput_rps=rps)
    return PipelinePlan(
        pipeline="ocr:1.0.0", contract=CONTRACT, cores=2, python_steps=["det_pre"], steps=[],
        end_to_end=end_to_end, decided_at=datetime.now(UTC),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("p99_ms", "ok", "margin", "verdict"),
    [
        (5445.0, "NO", "2445 ms over (1.815x the bound)", "MISSED at c=4: p99 5445 ms against 3000 ms"),
        (1500.0, "yes", "1500 ms to spare (0.5x the bound)", "met at c=4: p99 1500 ms against 3000 ms"),
    ],
)
def test_latency_says_met_or_missed_and_by_how_much(p99_ms: float, ok: str, margin: str, verdict: str) -> None:
    latency, throughput = contract_rows(planned(p99_ms, rps=2.5))
    assert (latency["ok"], latency["margin"]) == (ok, margin)
    assert latency["verdict"].startswith(verdict) and latency["verdict"].endswith(margin)
    assert (throughput["ok"], throughput["margin"]) == ("yes", "0.5 req/s above")


def test_a_throughput_floor_missed_says_how_short() -> None:
    _, throughput = contract_rows(planned(100.0, rps=0.75))
    assert (throughput["ok"], throughput["margin"]) == ("NO", "1.25 req/s short")


def test_without_an_example_the_end_to_end_is_not_measured() -> None:
    (only,) = contract_rows(planned(None))
    assert only["ok"] == "?" and "--input NAME=FILE" in only["verdict"]


def test_a_step_row_names_precision_threads_and_batch_limit() -> None:
    step = StepPlan(
        step="det", model="ocr.det:1.0.0", cost_ms=798.7, cores=1, p99_budget_ms=1919.0,
        plan="cpu/fp32 threads=1 batch<=4 delay=0ms", runtime="onnxruntime", precision="fp32", threads=1,
        max_batch_size=4, input_shapes={"x": [1, 3, 736, 736]}, decision_id="d1",
    )  # fmt: skip
    row = step_row(step)
    assert (row["precision"], row["threads"], row["batch<="]) == ("onnxruntime/fp32", "1", "4")
    assert row["measured on"] == "x 1x3x736x736"
    older = step.model_copy(update={"precision": None, "threads": None, "max_batch_size": None, "input_shapes": {}})
    assert (step_row(older)["precision"], step_row(older)["measured on"]) == ("-", "synthetic")
