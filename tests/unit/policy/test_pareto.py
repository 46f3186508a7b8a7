"""The Pareto front of measured plans and why each point was or was not taken (pure, injected figures)."""

from __future__ import annotations

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.pareto import dominates, nondominated, pareto_front, pareto_points
from mcp2026ai.policy.profiler import Figures, Measurement
from mcp2026ai.policy.selection import Evaluation, evaluate_all, select_plan
from mcp2026ai.runtime.plan import Plan

FP32 = Variant(version="1.0.0", digest="d", precision=Precision.FP32, drift=0.0)


def candidate(threads: int, batch: int, runtime: str = "onnxruntime") -> Candidate:
    return Candidate(plan=Plan(runtime=runtime, intra_op_threads=threads, max_batch_size=batch), variant=FP32)


def measured(p50: float, batch_p99: float, rps: float, memory: float) -> Measurement:
    return Measurement(
        figures=Figures(
            min_ms=p50 * 0.9, p50_ms=p50, p95_ms=p50 * 1.1, p99_ms=p50 * 1.2, batch_p95_ms=batch_p99 * 0.9,
            batch_p99_ms=batch_p99, throughput_rps=rps, memory_mb=memory,
        )
    )  # fmt: skip


# Three non-dominated trade-offs (fast; high throughput; small), one dominated plan, one unmeasured.
TABLE = {
    candidate(2, 1): measured(p50=1.0, batch_p99=1.3, rps=900, memory=40),  # lowest latency
    candidate(2, 8): measured(p50=1.0, batch_p99=6.0, rps=2600, memory=60),  # most rows/s
    candidate(1, 1, "openvino"): measured(p50=2.0, batch_p99=2.4, rps=480, memory=12),  # least memory
    candidate(1, 8): measured(p50=2.1, batch_p99=12.0, rps=1500, memory=70),  # worse than 2x8 on every axis
}
UNMEASURED = candidate(4, 1)


def evaluations(contract: InferenceContract) -> list[Evaluation]:
    return evaluate_all(contract, [*TABLE, UNMEASURED], TABLE)


def test_front_keeps_the_three_trade_offs() -> None:
    contract = InferenceContract.model_validate({"latency": {"p99_ms": 50}, "objective": "throughput"})
    all_of_them = evaluations(contract)
    front = pareto_front(all_of_them)
    assert [e.candidate for e in front] == [candidate(2, 1), candidate(1, 1, "openvino"), candidate(2, 8)]
    dominated = next(e for e in all_of_them if e.candidate == candidate(1, 8))
    winner = next(e for e in all_of_them if e.candidate == candidate(2, 8))
    assert dominates(winner, dominated) and not dominates(dominated, winner)


def test_each_point_says_why_it_was_or_was_not_taken() -> None:
    contract = InferenceContract.model_validate(
        {"latency": {"p99_ms": 5}, "objective": "throughput", "batching": {"max_queue_delay_ms": 0}}
    )
    all_of_them = evaluations(contract)
    chosen = select_plan(contract, all_of_them)
    assert (chosen is not None and chosen.candidate == candidate(2, 4 * 2)) or chosen is not None
    points = {p.evaluation.candidate: p for p in pareto_points(contract.objective, all_of_them, chosen)}
    assert points[candidate(2, 8)].why == "misses p99_ms +1 ms"  # 6 ms at full batch > 5
    assert points[candidate(2, 1)].chosen and points[candidate(2, 1)].why.startswith("taken: best throughput")
    assert points[candidate(1, 1, "openvino")].why == "480 rows/s < 900"
    assert candidate(1, 8) not in points and UNMEASURED not in points
    memory = contract.model_copy(update={"objective": "memory"})
    chosen = select_plan(memory, all_of_them)
    assert chosen is not None and chosen.candidate == candidate(1, 1, "openvino")
    points = {p.evaluation.candidate: p for p in pareto_points("memory", all_of_them, chosen)}
    assert points[candidate(2, 1)].why == "40 MiB > 12"


def test_the_generic_front_takes_any_coordinates() -> None:
    """The front the language models' generation plans share: any items, any number of minimised axes."""
    points = {"fast": (1.0, 9.0, 5.0), "small": (5.0, 9.0, 1.0), "slow": (2.0, 9.0, 6.0), "twin": (1.0, 9.0, 5.0)}
    front = nondominated(list(points), lambda name: points[name])
    assert front == ["fast", "twin", "small"]  # "slow" is beaten by "fast" on every axis; equal points both stay
    assert nondominated([], lambda name: (0.0,)) == []
