from __future__ import annotations

from datetime import UTC, datetime

from mcp2026ai.contract import InferenceContract
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.profiler import Figures, Measurement
from mcp2026ai.policy.records import Decision
from mcp2026ai.policy.replan import ReplanMonitor, ReplanPolicy, reselect
from mcp2026ai.policy.selection import evaluate_all, select_plan
from mcp2026ai.runtime.plan import Plan
from tests.support.clock import FakeClock

T0 = datetime(2026, 5, 1, tzinfo=UTC)
VARIANT = Variant(version="1.0.0", digest="d", drift=0.0)


def _candidate(threads: int) -> Candidate:
    return Candidate(plan=Plan(intra_op_threads=threads), variant=VARIANT)


def _measured(p99: float) -> Measurement:
    return Measurement(
        figures=Figures(
            p50_ms=p99 / 2, p95_ms=p99, p99_ms=p99, batch_p95_ms=p99, batch_p99_ms=p99, throughput_rps=1000 / p99
        )
    )


def _decision() -> Decision:
    contract = InferenceContract.model_validate({"latency": {"p99_ms": 10}})
    table = {_candidate(1): _measured(4.0), _candidate(2): _measured(6.0), _candidate(4): _measured(12.0)}
    evaluations = evaluate_all(contract, list(table), table)
    return Decision(
        model="m",
        version="1.0.0",
        time=T0,
        trigger="register",
        contract=contract,
        evaluations=evaluations,
        chosen=select_plan(contract, evaluations),
    )


def test_reselect_penalizes_the_current_plan_and_switches() -> None:
    previous = _decision()
    assert previous.chosen is not None and previous.chosen.candidate == _candidate(1)
    decision = reselect(previous, observed_p99_ms=15.0, now=T0)
    assert decision.trigger == "replan" and decision.id != previous.id
    assert decision.chosen is not None and decision.chosen.candidate == _candidate(2)
    penalized = decision.evaluations[0]
    assert penalized.expected_p99_ms == 15.0 and not penalized.feasible
    assert "observed p99 15 ms > 10 ms" in decision.reason and "switching to" in decision.reason
    # a second violation, now on the 2-thread plan, leaves nothing feasible: the decision keeps it
    again = reselect(decision, observed_p99_ms=11.0, now=T0)
    assert again.chosen is None and "keeping it" in again.reason


def test_monitor_triggers_after_n_consecutive_windows_only() -> None:
    made: list[float] = []
    swapped: list[Decision] = []

    def replan(observed: float) -> Decision:
        made.append(observed)
        return reselect(_decision(), observed, T0)

    clock = FakeClock(start=0.0)
    monitor = ReplanMonitor(10.0, replan, swapped.append, ReplanPolicy(consecutive_windows=3, cooldown_s=60), clock)
    for p99 in (12, 13, 9, 12, 14):  # the good window breaks the streak
        assert monitor.observe(p99) is None
    assert monitor.streak == 2
    decision = monitor.observe(16)
    assert decision is not None and made == [12]  # the least violation of the streak
    assert swapped == [decision] and monitor.streak == 0


def test_monitor_cooldown_and_no_swap_without_a_choice() -> None:
    swapped: list[Decision] = []
    calls: list[float] = []

    def replan(observed: float) -> Decision:
        calls.append(observed)
        return _decision().model_copy(update={"chosen": None})

    clock = FakeClock(start=0.0)
    monitor = ReplanMonitor(10.0, replan, swapped.append, ReplanPolicy(consecutive_windows=1, cooldown_s=30), clock)
    assert monitor.observe(20) is not None
    assert swapped == []  # nothing chosen: nothing swapped
    clock.now = 10
    assert monitor.observe(20) is None  # cooling down
    clock.now = 31
    assert monitor.observe(20) is not None
    assert calls == [20, 20]
