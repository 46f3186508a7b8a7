"""Compare a primary response with its shadow: status, latency and every output tensor (pure).

Per output: max absolute difference, relative L2 ``||shadow - primary|| / ||primary||`` and, for
2-D score outputs ``(rows, classes)``, top-1 agreement (share of rows whose argmax matches).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mcp2026ai.routing.outcome import Outcome

_TINY = 1e-12


@dataclass(frozen=True)
class Observation:
    """What one side of a mirrored request produced."""

    outcome: Outcome
    latency_ms: float
    outputs: Mapping[str, np.ndarray] | None = None


@dataclass(frozen=True)
class OutputDiff:
    name: str
    comparable: bool
    """False when the output is missing on one side, shapes differ, or the values are not numbers."""
    equal: bool
    max_abs_diff: float | None = None
    rel_l2: float | None = None
    top1_rows: int = 0
    top1_agreed: int = 0


@dataclass(frozen=True)
class ShadowDiff:
    primary: Outcome
    shadow: Outcome
    primary_latency_ms: float
    shadow_latency_ms: float
    outputs: tuple[OutputDiff, ...] = ()

    @property
    def status_match(self) -> bool:
        return self.primary is self.shadow

    @property
    def latency_delta_ms(self) -> float:
        return self.shadow_latency_ms - self.primary_latency_ms


def compare(primary: Observation, shadow: Observation) -> ShadowDiff:
    both = primary.outputs is not None and shadow.outputs is not None
    outputs = _compare_outputs(primary.outputs or {}, shadow.outputs or {}) if both else ()
    return ShadowDiff(primary.outcome, shadow.outcome, primary.latency_ms, shadow.latency_ms, outputs)


def _compare_outputs(primary: Mapping[str, np.ndarray], shadow: Mapping[str, np.ndarray]) -> tuple[OutputDiff, ...]:
    names = sorted(set(primary) | set(shadow))
    return tuple(compare_output(name, primary.get(name), shadow.get(name)) for name in names)


def compare_output(name: str, primary: np.ndarray | None, shadow: np.ndarray | None) -> OutputDiff:
    if primary is None or shadow is None or primary.shape != shadow.shape:
        return OutputDiff(name, comparable=False, equal=False)
    if not (_numeric(primary) and _numeric(shadow)):
        return OutputDiff(name, comparable=False, equal=bool(np.array_equal(primary, shadow)))
    a, b = primary.astype(np.float64), shadow.astype(np.float64)
    rows, agreed = top1_agreement(a, b)
    return OutputDiff(
        name,
        comparable=True,
        equal=bool(np.array_equal(a, b)),
        max_abs_diff=max_abs_diff(a, b),
        rel_l2=rel_l2(a, b),
        top1_rows=rows,
        top1_agreed=agreed,
    )


def max_abs_diff(primary: np.ndarray, shadow: np.ndarray) -> float:
    return float(np.max(np.abs(shadow - primary))) if primary.size else 0.0


def rel_l2(primary: np.ndarray, shadow: np.ndarray) -> float:
    """``||shadow - primary||_2 / ||primary||_2``; 0 when both are zero, inf when only primary is."""
    error = float(np.linalg.norm((shadow - primary).ravel()))
    reference = float(np.linalg.norm(primary.ravel()))
    if reference < _TINY:
        return 0.0 if error < _TINY else float("inf")
    return error / reference


def top1_agreement(primary: np.ndarray, shadow: np.ndarray) -> tuple[int, int]:
    """``(rows compared, rows whose argmax agrees)`` for 2-D outputs with >= 2 columns; else (0, 0)."""
    if primary.ndim != 2 or primary.shape[1] < 2:
        return 0, 0
    agreed = np.argmax(primary, axis=1) == np.argmax(shadow, axis=1)
    return int(agreed.size), int(agreed.sum())


def _numeric(array: np.ndarray) -> bool:
    return array.dtype.kind in "biuf"
