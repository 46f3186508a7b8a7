"""Interleaved rounds, robust figures and re-measuring under outside load: fake backends on a FakeClock.

Each fake run advances the clock by what a scripted machine says it costs, so every figure below is
exact and nothing depends on this machine's timing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.contract import InferenceContract
from mcp2026ai.ir import Signature, import_model
from mcp2026ai.policy.candidates import Candidate, Variant
from mcp2026ai.policy.figures import Slot, robust_figures
from mcp2026ai.policy.load import CpuLoadMeter, LoadMark, LoadReading, busy_seconds
from mcp2026ai.policy.profiler import ProfileBudget, Profiler
from mcp2026ai.policy.selection import chosen_reason, evaluate_all, select_plan
from mcp2026ai.runtime.base import Backend, Tensors
from mcp2026ai.runtime.plan import Plan
from support.clock import FakeClock

from .support import write_mlp

BUDGET = ProfileBudget(
    seconds_per_plan=0.5, latency_runs=20, batch_runs=10, min_runs=5, warmup_runs=0, total_seconds=60, rounds=5
)
VARIANT = Variant(version="1.0.0", digest="d", drift=0.0)

Cost = Callable[[Plan, int, int], float]
"""Seconds one run costs: (plan, batch rows, how many runs this session has made so far)."""


class FakeBackend:
    """A backend whose runs cost scripted time on a FakeClock; every run is logged with its session."""

    def __init__(self, signature: Signature, plan: Plan, clock: FakeClock, cost: Cost, log: list[int]) -> None:
        self._signature, self.plan, self.clock, self.cost, self.log = signature, plan, clock, cost, log
        self.platform = "fake"
        self.loaded = False
        self.runs = 0

    @property
    def signature(self) -> Signature:
        return self._signature

    def load(self) -> None:
        self.loaded = True

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        rows = int(next(iter(inputs.values())).shape[0])
        self.clock.advance(self.cost(self.plan, rows, self.runs))
        self.runs += 1
        self.log.append(self.plan.intra_op_threads)
        return {"y": np.zeros((rows, 4), np.float32)}

    def unload(self) -> None:
        self.loaded = False


class ScriptedLoad:
    """Outside load by slot: ``loads[i]`` for the i-th measured window (then ``rest``)."""

    def __init__(self, loads: list[float], rest: float = 0.0) -> None:
        self.loads, self.rest, self.windows = list(loads), rest, 0

    def mark(self) -> LoadMark:
        return LoadMark(busy_s=0.0, own_s=0.0, wall_s=0.0)

    def since(self, mark: LoadMark) -> LoadReading:
        self.windows += 1
        outside = self.loads.pop(0) if self.loads else self.rest
        return LoadReading(outside_cores=outside, load_avg_1m=outside + 1)


@pytest.fixture()
def signature(tmp_path: Path) -> Signature:
    path = write_mlp(tmp_path / "mlp.onnx", width=8)
    return import_model(path, path.parent).signature


def candidates(threads: Sequence[int] = (1, 2), batches: Sequence[int] = (1,)) -> list[Candidate]:
    return [
        Candidate(plan=Plan(intra_op_threads=t, max_batch_size=b), variant=VARIANT) for t in threads for b in batches
    ]


def profiler(
    signature: Signature, cost: Cost, load: ScriptedLoad | None = None, budget: ProfileBudget = BUDGET
) -> tuple[Profiler, FakeClock, list[int]]:
    clock, log = FakeClock(), list[int]()
    naps: list[float] = []

    def factory(model: Path | bytes, sig: Signature, plan: Plan, *_: object) -> Backend:
        return FakeBackend(sig, plan, clock, cost, log)

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        clock.advance(seconds)

    measure = Profiler(
        lambda _: Path("unused.onnx"),
        signature,
        budget,
        clock=clock,
        load_meter=load or ScriptedLoad([]),
        sleep=sleep,
        cores=2,
        backend_factory=factory,
    )
    return measure, clock, log


def test_rounds_interleave_the_sessions(signature: Signature) -> None:
    measure, _, log = profiler(signature, lambda plan, rows, runs: 0.001)
    results = measure(candidates())
    first_two = log[:2]  # the priming run, then one untimed run per session as it loads
    assert first_two == [1, 1]
    timed = log[3:]
    switches = [index for index in range(1, len(timed)) if timed[index] != timed[index - 1]]
    assert len(switches) == 2 * BUDGET.rounds - 1  # A B A B ...: one switch between every pair of slots
    for measurement in results.values():
        assert measurement.figures is not None
        assert [r.round for r in measurement.figures.rounds] == list(range(BUDGET.rounds))
        assert measurement.figures.runs == BUDGET.latency_runs


def test_one_disturbed_round_does_not_decide_the_ranking(signature: Signature) -> None:
    """The fault seen: two threads' one noisy sample made it lose to one thread, twice as slow."""

    def cost(plan: Plan, rows: int, runs: int) -> float:
        if plan.intra_op_threads == 1:
            return 0.0031
        return 0.012 if 6 <= runs < 10 else 0.0014  # a burst of outside load during its second round

    measure, _, _ = profiler(signature, cost)
    table = measure(candidates())
    two = table[candidates()[1]].figures
    assert two is not None and two.p50_ms == 1.4 and two.min_ms == 1.4
    assert two.rounds[1].p50_ms == 12.0 and two.p99_spread_ms == pytest.approx(10.6)
    contract = InferenceContract.model_validate({"latency": {"p99_ms": 50}, "objective": "latency"})
    chosen = select_plan(contract, evaluate_all(contract, candidates(), table))
    assert chosen is not None and chosen.plan.intra_op_threads == 2
    reason = chosen_reason(contract, chosen, evaluate_all(contract, candidates(), table))
    assert "p50 1.4 ms, p99 1.4 ms (spread 10.6 ms over 5 rounds) <= 50" in reason


def test_a_round_under_heavy_outside_load_is_retaken_when_quiet(signature: Signature) -> None:
    # slot windows: A0 A? ... the third measured window (session A, round 1) saw 1.6 busy cores out of 2
    load = ScriptedLoad([0.1, 0.2, 1.6, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.8, 0.3])
    measure, _, _ = profiler(signature, lambda plan, rows, runs: 0.002, load)
    results = measure(candidates())
    one = results[candidates()[0]]
    assert one.figures is not None
    retaken = [r for r in one.figures.rounds if r.remeasured]
    assert [r.round for r in retaken] == [1]
    assert retaken[0].outside_cores == 0.0  # the window after the quiet probes (1.8 busy, then 0.3)
    assert one.figures.loaded_rounds == 0
    assert one.note == "1 of 5 rounds re-measured once the machine was quiet (outside load above 1 cores)"
    other = results[candidates()[1]]
    assert other.figures is not None and other.note == "" and other.figures.remeasured_rounds == 0


def test_a_machine_that_never_quiets_keeps_the_round_and_says_so(signature: Signature) -> None:
    load = ScriptedLoad([0.0, 0.0, 1.9], rest=1.9)
    budget = BUDGET.model_copy(update={"quiet_wait_s": 2.0})
    measure, clock, _ = profiler(signature, lambda plan, rows, runs: 0.002, load, budget)
    started = clock()
    results = measure(candidates())
    figures = results[candidates()[0]].figures
    assert figures is not None and figures.loaded_rounds >= 1
    assert results[candidates()[0]].note.endswith(
        "rounds measured under outside load above 1 cores (not quiet within 2 s)"
    )
    assert clock() - started < budget.total_seconds  # the wait for quiet is bounded


def test_batch_figures_use_the_rounds_that_timed_the_batch(signature: Signature) -> None:
    measure, _, _ = profiler(signature, lambda plan, rows, runs: 0.001 + 0.0005 * rows)
    results = measure(candidates(threads=(1,), batches=(1, 4)))
    batched = results[candidates(threads=(1,), batches=(4,))[0]].figures
    assert batched is not None
    assert batched.batch_p50_ms == 3.0 and batched.throughput_rps == pytest.approx(4 / 0.003, rel=1e-3)
    assert all(r.batch_p50_ms == 3.0 for r in batched.rounds)
    assert batched.runs == BUDGET.latency_runs + BUDGET.batch_runs


def test_robust_figures_take_the_median_of_round_medians() -> None:
    slots = [Slot(round=i, single=[0.002] * 9 + [0.004]) for i in range(4)]
    slots.append(Slot(round=4, single=[0.020] * 10, load=LoadReading(outside_cores=1.5)))
    figures = robust_figures(slots, 1, None, 1.0, heavy_cores=1.0)
    assert figures is not None
    assert figures.p50_ms == 2.0 and figures.min_ms == 2.0
    assert figures.loaded_rounds == 1 and figures.rounds[4].outside_cores == 1.5
    assert figures.p99_spread_ms == pytest.approx(20.0 - 3.82, abs=0.01)


def test_busy_seconds_reads_only_this_process_cpus() -> None:
    stat = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 100 0 50 900 20 0 0 0 0 0\ncpu1 300 0 100 500 0 0 0 0 0 0\nintr 5\n"
    assert busy_seconds(stat, {0}, 100.0) == 1.5
    assert busy_seconds(stat, {0, 1}, 100.0) == 5.5
    assert busy_seconds(stat, {7}, 100.0) is None


def test_cpu_load_meter_subtracts_its_own_cpu_time(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    clock, own = FakeClock(), [0.0]
    meter = CpuLoadMeter(stat, clock=clock, own_cpu=lambda: own[0], cpus={0, 1})
    meter.ticks_per_s = 100.0
    stat.write_text("cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n")
    mark = meter.mark()
    stat.write_text("cpu0 100 0 0 0 0 0 0 0\ncpu1 60 0 20 0 0 0 0 0\n")  # 1.8 busy seconds over one second
    clock.advance(1.0)
    own[0] = 0.6  # of which this process used 0.6
    reading = meter.since(mark)
    assert reading.outside_cores == 1.2
    missing = CpuLoadMeter(tmp_path / "absent", clock=clock, cpus={0})
    assert missing.since(missing.mark()).outside_cores is None
