"""Pure selection against contracts, with injected measurements."""

from __future__ import annotations

from typing import Any

import pytest

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.profiler import Figures, Measurement
from mcp2026ai.policy.selection import (
    NoFeasiblePlanError,
    evaluate_all,
    expected_latency_ms,
    nearest,
    select_plan,
)
from mcp2026ai.runtime.plan import Plan

FP32 = Variant(version="1.0.0", digest="d32", precision=Precision.FP32, drift=0.0)


def contract(**document: Any) -> InferenceContract:
    return InferenceContract.model_validate(document)


def candidate(threads: int = 1, batch: int = 1, variant: Variant = FP32, delay: float = 2.0) -> Candidate:
    plan = Plan(
        precision=variant.precision,
        intra_op_threads=threads,
        max_batch_size=batch,
        max_queue_delay_ms=delay if batch > 1 else 0.0,
    )
    return Candidate(plan=plan, variant=variant)


def figures(
    p99: float,
    rps: float,
    batch_p99: float | None = None,
    memory: float = 10.0,
    p50: float | None = None,
    fastest: float | None = None,
) -> Measurement:
    batch_p99 = p99 if batch_p99 is None else batch_p99
    return Measurement(
        figures=Figures(
            min_ms=fastest,
            p50_ms=p99 / 2 if p50 is None else p50,
            p95_ms=p99 * 0.9,
            p99_ms=p99,
            batch_p95_ms=batch_p99 * 0.9,
            batch_p99_ms=batch_p99,
            throughput_rps=rps,
            memory_mb=memory,
            runs=50,
        )
    )


def choose(c: InferenceContract, table: dict[Candidate, Measurement]) -> Candidate | None:
    chosen = select_plan(c, evaluate_all(c, list(table), table))
    return chosen.candidate if chosen else None


def test_expected_latency_of_batched_plan_adds_queue_delay() -> None:
    measured = figures(p99=2.0, rps=500, batch_p99=9.0).figures
    assert measured is not None
    assert expected_latency_ms(candidate(batch=1).plan, measured) == 2.0
    assert expected_latency_ms(candidate(batch=8, delay=3.0).plan, measured) == 12.0


def test_only_a_batched_plan_meets_the_throughput_floor() -> None:
    c = contract(latency={"p99_ms": 40}, throughput={"min_rps": 900}, objective="latency")
    table = {
        candidate(batch=1): figures(p99=2.0, rps=500),
        candidate(batch=4): figures(p99=2.0, rps=850, batch_p99=5.0),
        candidate(batch=8): figures(p99=2.0, rps=1200, batch_p99=8.0),
        candidate(batch=16): figures(p99=2.0, rps=1600, batch_p99=30.0),
    }
    assert choose(c, table) == candidate(batch=8)  # feasible: 8 and 16; 8 has the lower expected p99
    assert choose(c.model_copy(update={"objective": "throughput"}), table) == candidate(batch=16)


def test_figures_within_noise_of_the_best_go_to_the_cheaper_plan() -> None:
    c = contract(latency={"p99_ms": 100}, objective="latency")
    table = {
        candidate(threads=1): figures(p99=0.033, rps=60_000),  # 13 us slower than two threads: noise
        candidate(threads=2): figures(p99=0.020, rps=66_000),
    }
    assert choose(c, table) == candidate(threads=1)
    table = {
        candidate(threads=1): figures(p99=95.0, rps=10),  # a real difference: two threads win
        candidate(threads=2): figures(p99=55.0, rps=18),
    }
    assert choose(c, table) == candidate(threads=2)
    throughput = c.model_copy(update={"objective": "throughput"})
    table = {
        candidate(batch=8): figures(p99=2.0, rps=1200, batch_p99=8.0),
        candidate(batch=16): figures(p99=2.0, rps=1250, batch_p99=30.0),  # +4 %: not worth 16-row batches
    }
    assert choose(throughput, table) == candidate(batch=8)


def test_a_tied_p99_with_a_slower_median_is_not_noise() -> None:
    c = contract(latency={"p99_ms": 5000}, objective="latency")
    table = {  # measured at serve time on the 2-core host: one thread's p99 tied, its median did not
        candidate(threads=1): figures(p99=79.84, p50=77.1, rps=12.9),
        candidate(threads=2): figures(p99=76.23, p50=52.06, rps=17.8),
    }
    assert choose(c, table) == candidate(threads=2)
    table = {  # both figures within noise: the cheaper plan still wins
        candidate(threads=1): figures(p99=0.026, p50=0.013, rps=71_000),
        candidate(threads=2): figures(p99=0.020, p50=0.013, rps=73_000),
    }
    assert choose(c, table) == candidate(threads=1)


def test_a_tie_measured_under_outside_load_needs_a_tied_fastest_run_too() -> None:
    c = contract(latency={"p99_ms": 5000}, objective="latency")
    table = {  # ResNet-50 profiled while the host's other tenants held a core: medians and tails tied
        candidate(threads=1): figures(p99=110.0, p50=101.0, fastest=97.5, rps=9.9),
        candidate(threads=2): figures(p99=112.0, p50=103.0, fastest=55.2, rps=9.8),
    }
    assert choose(c, table) == candidate(threads=2)
    table = {  # a tiny model: every figure within noise, the fastest runs too: the cheaper plan wins
        candidate(threads=1): figures(p99=0.026, p50=0.013, fastest=0.011, rps=71_000),
        candidate(threads=2): figures(p99=0.020, p50=0.013, fastest=0.010, rps=73_000),
    }
    assert choose(c, table) == candidate(threads=1)
    table = {  # a faster best case does not beat a clearly better p99
        candidate(threads=1): figures(p99=60.0, p50=50.0, fastest=48.0, rps=20.0),
        candidate(threads=2): figures(p99=120.0, p50=100.0, fastest=30.0, rps=10.0),
    }
    assert choose(c, table) == candidate(threads=1)


def test_latency_runs_what_is_queued_as_one_batch_when_batching_pays() -> None:
    c = contract(latency={"p99_ms": 40}, objective="latency")
    single = {"p99": 2.0, "p50": 1.0, "fastest": 0.9}
    table = {  # one session, work-conserving (no delay): a lone request runs as fast at every max batch
        candidate(batch=1): figures(rps=500, **single),
        candidate(batch=4, delay=0.0): figures(rps=1400, batch_p99=3.5, **single),
        candidate(batch=8, delay=0.0): figures(rps=1450, batch_p99=6.5, **single),  # +4 % over 4: noise
        candidate(batch=16, delay=0.0): figures(rps=3000, batch_p99=45.0, **single),  # a full batch misses p99
    }
    chosen = select_plan(c, evaluate_all(c, list(table), table))
    assert chosen is not None and chosen.candidate == candidate(batch=4, delay=0.0)
    assert chosen.lone_p99_ms == 2.0 and chosen.expected_p99_ms == 3.5  # the budget holds a full batch


def test_latency_keeps_batch_one_when_batching_does_not_pay() -> None:
    c = contract(latency={"p99_ms": 40}, objective="latency")
    single = {"p99": 2.0, "p50": 1.0, "fastest": 0.9}
    table = {  # a batch of 8 takes 8 runs' time: queued requests gain nothing from running together
        candidate(batch=1): figures(rps=500, **single),
        candidate(batch=8, delay=0.0): figures(rps=520, batch_p99=16.0, **single),
    }
    assert choose(c, table) == candidate(batch=1)


def test_only_more_threads_meets_the_p99() -> None:
    c = contract(latency={"p99_ms": 5}, objective="memory")
    table = {
        candidate(threads=1): figures(p99=8.0, rps=150, memory=10),
        candidate(threads=2): figures(p99=4.5, rps=260, memory=12),
        candidate(threads=4): figures(p99=3.0, rps=400, memory=14),
    }
    assert choose(c, table) == candidate(threads=2)  # memory objective among the feasible 2 and 4


def test_impossible_contract_names_the_nearest_plan_and_each_miss() -> None:
    c = contract(latency={"p99_ms": 1}, throughput={"min_rps": 5000})
    table = {
        candidate(threads=1): figures(p99=8.0, rps=150),
        candidate(threads=2): figures(p99=4.0, rps=260),
        candidate(threads=2, batch=8): figures(p99=4.0, rps=1000, batch_p99=20.0),
    }
    evaluations = evaluate_all(c, list(table), table)
    assert select_plan(c, evaluations) is None
    error = NoFeasiblePlanError("m:1.0.0", evaluations)
    assert error.nearest is not None and error.nearest.candidate == candidate(threads=2)
    message = str(error)
    assert "no plan meets the contract of m:1.0.0 on this machine (3 candidates)" in message
    assert "nearest: cpu/fp32 threads=2 batch<=1" in message
    assert "latency.p99_ms by 3 ms (4 > 1)" in message
    assert "throughput.min_rps by 4740 rows/s (260 < 5000)" in message


def test_memory_budget_is_a_constraint() -> None:
    c = contract(resources={"memory_mb": 50})
    table = {
        candidate(threads=1): figures(p99=3.0, rps=300, memory=80),
        candidate(threads=2): figures(p99=4.0, rps=250, memory=40),
    }
    assert choose(c, table) == candidate(threads=2)
    misses = evaluate_all(c, list(table), table)[0].misses
    assert [m.describe() for m in misses] == ["resources.memory_mb by 30 MiB (80 > 50)"]


def test_p95_budget_checked_when_given() -> None:
    c = contract(latency={"p99_ms": 100, "p95_ms": 3})
    table = {candidate(threads=1): figures(p99=5.0, rps=300), candidate(threads=2): figures(p99=3.0, rps=300)}
    assert choose(c, table) == candidate(threads=2)


def test_quantized_variant_needs_allowed_precision_and_drift_within_tolerance() -> None:
    good = Variant(version="1.1.0", digest="d8", precision=Precision.INT8, drift=0.005)
    drifty = Variant(version="1.2.0", digest="d8b", precision=Precision.INT8, drift=0.08)
    unverified = Variant(version="1.3.0", digest="d16", precision=Precision.FP16, drift=None)
    table = {
        candidate(): figures(p99=6.0, rps=160),
        candidate(variant=good): figures(p99=3.0, rps=330),
        candidate(variant=drifty): figures(p99=1.0, rps=900),
        candidate(variant=unverified): figures(p99=1.0, rps=900),
    }
    allowed = contract(precision={"allowed": ["fp32", "int8", "fp16"]}, accuracy={"max_drift": 0.01})
    assert choose(allowed, table) == candidate(variant=good)
    notes = {
        e.candidate.variant.version: [m.describe() for m in e.misses] for e in evaluate_all(allowed, list(table), table)
    }
    assert notes["1.2.0"] == ["accuracy.max_drift by 0.07 (0.08 > 0.01)"]
    assert notes["1.3.0"] == ["accuracy.max_drift (fp16@1.3.0 has no verified drift)"]
    fp32_only = contract(accuracy={"max_drift": 0.01})
    assert choose(fp32_only, table) == candidate()


def test_unmeasured_candidates_are_never_chosen_and_are_farthest() -> None:
    c = contract(latency={"p99_ms": 1})
    failed = candidate(threads=4)
    table = {candidate(threads=1): figures(p99=3.0, rps=300), failed: Measurement(note="failed to load: boom")}
    evaluations = evaluate_all(c, list(table), table)
    assert select_plan(c, evaluations) is None
    assert nearest(evaluations) is not None and nearest(evaluations).candidate == candidate(threads=1)  # type: ignore[union-attr]
    assert evaluations[1].note == "failed to load: boom" and not evaluations[1].feasible


def test_no_candidates_at_all_still_gives_a_clear_error() -> None:
    with pytest.raises(NoFeasiblePlanError, match="no candidate plan"):
        raise NoFeasiblePlanError("m:1.0.0", [])


def test_ties_go_to_fewer_threads() -> None:
    c = contract()
    table = {candidate(threads=2): figures(p99=3.0, rps=300), candidate(threads=1): figures(p99=3.0, rps=300)}
    assert choose(c, table) == candidate(threads=1)


def _instances(threads: int, count: int) -> Candidate:
    return Candidate(plan=Plan(intra_op_threads=threads, instances=count), variant=FP32)


def test_among_plans_as_fast_alone_the_one_serving_more_rows_wins() -> None:
    """ResNet-50 under outside load: one thread ties two for a lone request; the two-instance plan ties
    too and serves twice the rows per second: it is the one to serve concurrent clients with."""
    one, two, split = candidate(threads=1), candidate(threads=2), _instances(1, 2)
    table = {
        one: figures(60.0, 25.0, p50=40.0, fastest=30.0),
        two: figures(61.0, 25.5, p50=40.5, fastest=30.5),
        split: figures(62.0, 50.0, p50=41.0, fastest=31.0),
    }
    c = contract(latency={"p99_ms": 1000})
    chosen = select_plan(c, evaluate_all(c, list(table), table))
    assert chosen is not None and chosen.candidate == split


def test_instances_count_as_threads_when_everything_ties() -> None:
    one, split = candidate(threads=1), _instances(1, 2)
    table = {one: figures(10.0, 100.0, p50=5.0, fastest=4.0), split: figures(10.0, 104.0, p50=5.0, fastest=4.0)}
    c = contract(latency={"p99_ms": 1000})
    chosen = select_plan(c, evaluate_all(c, list(table), table))
    assert chosen is not None and chosen.candidate == one  # two busy threads for 4 % more rows: not worth it
