"""Re-planning at run time when the served p99 breaks the contract.

:class:`ReplanMonitor` is fed one p99 per observation window. After ``consecutive_windows`` windows
over budget (and outside the cool-down after its last re-plan) it asks its ``replan`` callable for a
:class:`Decision` and, when that decision chose a plan, hands it to ``swap`` (the server swaps the
backend in without failing requests). :func:`reselect` is the pure re-selection the orchestrator uses:
the current plan's p99 is replaced by the observed one, every other candidate keeps its measured
figures, and the contract's selection runs again. The monitor is pure too: the clock is injected.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.clock import Clock
from mcp2026ai.policy.profiler import Measurement
from mcp2026ai.policy.records import Decision, new_decision_id
from mcp2026ai.policy.selection import Evaluation, evaluate, fmt, select_plan


class ReplanPolicy(BaseModel):
    """When a contract violation at run time triggers a re-plan."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    consecutive_windows: int = Field(3, ge=1, le=1000, description="Windows over the p99 budget in a row.")
    cooldown_s: float = Field(30.0, ge=0, le=86_400, description="Least time between two re-plans.")


def _penalized(decision: Decision, current: Evaluation, observed_p99_ms: float) -> list[Evaluation]:
    updated = evaluate(
        decision.contract, current.candidate, Measurement(figures=current.figures), observed_p99_ms=observed_p99_ms
    )
    updated = updated.model_copy(update={"note": f"observed p99 {fmt(observed_p99_ms)} ms while serving"})
    return [updated if e.candidate == current.candidate else e for e in decision.evaluations]


def reselect(previous: Decision, observed_p99_ms: float, now: datetime) -> Decision:
    """A new decision from ``previous`` with the current plan's p99 set to what serving observed."""
    current = previous.chosen
    budget = previous.contract.latency.p99_ms
    if current is None or current.figures is None:
        evaluations = list(previous.evaluations)
        chosen = select_plan(previous.contract, evaluations)
        reason = "re-selected: the previous decision chose no plan"
    else:
        evaluations = _penalized(previous, current, observed_p99_ms)
        chosen = select_plan(previous.contract, evaluations)
        head = f"observed p99 {fmt(observed_p99_ms)} ms > {fmt(budget)} ms on {current.candidate.describe()}"
        if chosen is None:
            reason = f"{head}; no other measured plan meets the contract, keeping it"
        else:
            reason = f"{head}; switching to {chosen.candidate.describe()} (p99 {fmt(chosen.expected_p99_ms or 0.0)} ms)"
    return previous.model_copy(
        update={
            "id": new_decision_id(),
            "time": now,
            "trigger": "replan",
            "evaluations": evaluations,
            "chosen": chosen,
            "reason": reason,
            "planning_s": 0.0,
        }
    )


class ReplanMonitor:
    """Counts consecutive p99 windows over budget and triggers a re-plan after enough of them."""

    def __init__(
        self,
        p99_budget_ms: float,
        replan: Callable[[float], Decision],
        swap: Callable[[Decision], None],
        policy: ReplanPolicy | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.p99_budget_ms = p99_budget_ms
        self.replan = replan
        self.swap = swap
        self.policy = policy or ReplanPolicy()
        self.clock = clock
        self._streak: list[float] = []
        self._last_replan: float | None = None

    @property
    def streak(self) -> int:
        return len(self._streak)

    def observe(self, window_p99_ms: float) -> Decision | None:
        """Feed one window's p99; returns the re-plan decision when one was made."""
        if window_p99_ms <= self.p99_budget_ms:
            self._streak.clear()
            return None
        self._streak.append(window_p99_ms)
        if len(self._streak) < self.policy.consecutive_windows or self._cooling_down():
            return None
        observed = min(self._streak)  # over budget by at least this much in every window of the streak
        self._streak.clear()
        self._last_replan = self.clock()
        decision = self.replan(observed)
        if decision.chosen is not None:
            self.swap(decision)
        return decision

    def _cooling_down(self) -> bool:
        return self._last_replan is not None and self.clock() - self._last_replan < self.policy.cooldown_s
