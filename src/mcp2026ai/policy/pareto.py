"""The Pareto front of measured plans on latency, throughput and memory, and why each was not taken.

A plan is on the front when no other measured plan is at least as good on all three (lower p99 at
its max batch, higher rows per second, less memory) and better on one. The front shows the
trade-offs the machine offers; the contract's constraints and objective pick one point of it (or,
among plans within measurement noise of each other, the cheapest, which may sit just off it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from mcp2026ai.policy.selection import Evaluation, fmt, typical_ms, within_noise

T = TypeVar("T")


class ParetoPoint(BaseModel):
    """One measured plan's position: its three coordinates, whether it is on the front, and why it was
    or was not the one taken."""

    model_config = ConfigDict(frozen=True)

    evaluation: Evaluation
    p99_ms: float
    throughput_rps: float
    memory_mb: float | None
    on_front: bool
    chosen: bool
    why: str


def _coordinates(evaluation: Evaluation) -> tuple[float, float, float]:
    figures = evaluation.figures
    assert figures is not None and evaluation.expected_p99_ms is not None
    memory = figures.memory_mb if figures.memory_mb is not None else float("inf")
    return evaluation.expected_p99_ms, -figures.throughput_rps, memory


def dominates_at(mine: Sequence[float], theirs: Sequence[float]) -> bool:
    """Whether coordinates ``mine`` are at least as good as ``theirs`` on every axis and better on one
    (every axis to be minimised: negate one to be maximised)."""
    return all(x <= y for x, y in zip(mine, theirs, strict=True)) and tuple(mine) != tuple(theirs)


def nondominated(items: Sequence[T], coordinates: Callable[[T], Sequence[float]]) -> list[T]:
    """The items no other item dominates on ``coordinates``, in coordinate order (the first axis first).
    The tensor plans' front below and the language models' generation plans share it."""
    points = [(item, tuple(coordinates(item))) for item in items]
    front = [
        (item, mine)
        for item, mine in points
        if not any(dominates_at(theirs, mine) for other, theirs in points if other is not item)
    ]
    return [item for item, _ in sorted(front, key=lambda pair: pair[1])]


def dominates(a: Evaluation, b: Evaluation) -> bool:
    """Whether ``a`` is at least as good as ``b`` on every axis and better on one (all to be minimised)."""
    return dominates_at(_coordinates(a), _coordinates(b))


def pareto_front(evaluations: Sequence[Evaluation]) -> list[Evaluation]:
    """The measured evaluations no other measured one dominates, fastest first."""
    measured = [e for e in evaluations if e.figures is not None and e.expected_p99_ms is not None]
    return nondominated(measured, _coordinates)


def why_not(objective: str, evaluation: Evaluation, chosen: Evaluation | None) -> str:
    """Why ``evaluation`` was not the plan taken (or, for the chosen one, why it was)."""
    if chosen is not None and evaluation.candidate == chosen.candidate:
        return f"taken: best {objective} among the feasible plans"
    if not evaluation.feasible:
        return "misses " + ("; ".join(miss.short() for miss in evaluation.misses) or evaluation.note)
    if chosen is None or chosen.figures is None or evaluation.figures is None:
        return "feasible"
    if within_noise(objective, evaluation, chosen):
        return f"ties on {objective} within noise; the taken plan is cheaper (threads, batch, drift)"
    if objective == "throughput":
        return f"{fmt(evaluation.figures.throughput_rps)} rows/s < {fmt(chosen.figures.throughput_rps)}"
    if objective == "memory":
        mine, least = evaluation.figures.memory_mb, chosen.figures.memory_mb
        return f"{fmt(mine or 0.0)} MiB > {fmt(least or 0.0)}" if mine is not None else "memory not measured"
    return f"typical latency {fmt(typical_ms(evaluation))} ms > {fmt(typical_ms(chosen))}"


def pareto_points(objective: str, evaluations: Sequence[Evaluation], chosen: Evaluation | None) -> list[ParetoPoint]:
    """The front, plus the chosen plan if it sits off it (a cheaper tie), each with its reason."""
    front = pareto_front(evaluations)
    rows = list(front)
    if chosen is not None and chosen.figures is not None and all(e.candidate != chosen.candidate for e in front):
        rows.append(chosen)
    points = []
    for evaluation in rows:
        figures = evaluation.figures
        assert figures is not None and evaluation.expected_p99_ms is not None
        points.append(
            ParetoPoint(
                evaluation=evaluation,
                p99_ms=evaluation.expected_p99_ms,
                throughput_rps=figures.throughput_rps,
                memory_mb=figures.memory_mb,
                on_front=evaluation in front,
                chosen=chosen is not None and evaluation.candidate == chosen.candidate,
                why=why_not(objective, evaluation, chosen),
            )
        )
    return points
