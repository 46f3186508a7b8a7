"""Drift between a baseline's outputs and a candidate's on the same inputs (pure numpy).

* relative L2 drift ``||a - b|| / ||a||`` (a = baseline), per output; the model's drift is the worst.
* top-1 agreement: share of rows whose arg-max class is the same (rows = leading axis).
* confidence shift: mean over rows of how much the candidate's probability of the baseline's top-1
  class moved (negative: less confident). When the baseline's rows are probability distributions
  both outputs are used as they are; otherwise both go through a softmax first.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from pydantic import BaseModel, ConfigDict


class OutputDrift(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    rel_l2: float
    top1_agreement: float | None = None
    confidence_shift: float | None = None


class DriftReport(BaseModel):
    """Per-output drift plus the model-level figures (worst drift, primary output's class figures)."""

    model_config = ConfigDict(frozen=True)

    outputs: list[OutputDrift]
    samples: int

    @property
    def rel_l2(self) -> float:
        return max(output.rel_l2 for output in self.outputs)

    @property
    def primary(self) -> OutputDrift:
        return self.outputs[0]


def rel_l2(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """``||a - b|| / ||a||``; 0 when both are zero, infinity when only the baseline is."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: baseline {a.shape}, candidate {b.shape}")
    diff = float(np.linalg.norm(a - b))
    norm = float(np.linalg.norm(a))
    if norm == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / norm


def _rows(scores: np.ndarray) -> np.ndarray:
    array = np.asarray(scores, dtype=np.float64)
    return array.reshape(array.shape[0], -1)


def is_classifier_output(scores: np.ndarray) -> bool:
    """At least two dimensions and two or more classes per row."""
    return scores.ndim >= 2 and scores.shape[0] > 0 and _rows(scores).shape[1] >= 2


def top1_agreement(baseline: np.ndarray, candidate: np.ndarray) -> float:
    return float(np.mean(_rows(baseline).argmax(axis=1) == _rows(candidate).argmax(axis=1)))


def is_distribution(scores: np.ndarray) -> bool:
    """Whether every row is non-negative and sums to 1 (a softmax output)."""
    rows = _rows(scores)
    return bool(np.all(rows >= 0) and np.allclose(rows.sum(axis=1), 1.0, atol=1e-3))


def probabilities(scores: np.ndarray, already: bool) -> np.ndarray:
    """Rows as probabilities: kept as they are if ``already``, softmax otherwise."""
    rows = _rows(scores)
    if already:
        return rows
    shifted = np.exp(rows - rows.max(axis=1, keepdims=True))
    normalized: np.ndarray = shifted / shifted.sum(axis=1, keepdims=True)
    return normalized


def confidence_shift(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Mean change of the probability of the baseline's top-1 class; the baseline decides softmax or not."""
    already = is_distribution(baseline)
    base = probabilities(baseline, already)
    cand = probabilities(candidate, already)
    top = base.argmax(axis=1)
    index = np.arange(len(top))
    return float(np.mean(cand[index, top] - base[index, top]))


def output_drift(name: str, baseline: np.ndarray, candidate: np.ndarray) -> OutputDrift:
    if not is_classifier_output(baseline):
        return OutputDrift(name=name, rel_l2=rel_l2(baseline, candidate))
    return OutputDrift(
        name=name,
        rel_l2=rel_l2(baseline, candidate),
        top1_agreement=top1_agreement(baseline, candidate),
        confidence_shift=confidence_shift(baseline, candidate),
    )


def compare(baseline: Mapping[str, np.ndarray], candidate: Mapping[str, np.ndarray]) -> DriftReport:
    """Drift on every baseline output (in its order); the candidate must have them all."""
    missing = [name for name in baseline if name not in candidate]
    if not baseline or missing:
        raise ValueError(f"candidate lacks outputs {missing}" if missing else "no outputs to compare")
    outputs = [output_drift(name, baseline[name], candidate[name]) for name in baseline]
    samples = int(next(iter(baseline.values())).shape[0]) if next(iter(baseline.values())).ndim else 1
    return DriftReport(outputs=outputs, samples=samples)
