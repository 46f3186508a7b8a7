from __future__ import annotations

import math

import numpy as np
import pytest

from mcp2026ai.quantization import drift


def test_rel_l2_is_the_difference_norm_over_the_baseline_norm() -> None:
    baseline = np.array([3.0, 4.0])
    candidate = np.array([3.0, 4.5])
    assert drift.rel_l2(baseline, candidate) == pytest.approx(0.5 / 5.0)


def test_rel_l2_of_identical_and_of_zero_baselines() -> None:
    zeros = np.zeros((2, 3), np.float32)
    assert drift.rel_l2(zeros, zeros) == 0.0
    assert math.isinf(drift.rel_l2(zeros, zeros + 1))
    assert drift.rel_l2(np.ones(4), np.ones(4)) == 0.0


def test_rel_l2_rejects_different_shapes() -> None:
    with pytest.raises(ValueError, match="shapes differ"):
        drift.rel_l2(np.ones((2, 3)), np.ones((3, 2)))


def test_top1_agreement_counts_rows_with_the_same_argmax() -> None:
    baseline = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    candidate = np.array([[0.8, 0.2], [0.6, 0.4], [0.55, 0.45], [0.1, 0.9]])
    assert drift.top1_agreement(baseline, candidate) == 0.75


def test_top1_agreement_flattens_trailing_axes() -> None:
    baseline = np.zeros((2, 5, 1, 1))
    baseline[0, 3], baseline[1, 1] = 1, 1
    candidate = baseline.copy()
    candidate[1, 1], candidate[1, 4] = 0, 1
    assert drift.top1_agreement(baseline, candidate) == 0.5


def test_confidence_shift_on_probabilities_uses_them_as_they_are() -> None:
    baseline = np.array([[0.9, 0.1], [0.2, 0.8]])
    candidate = np.array([[0.7, 0.3], [0.1, 0.9]])
    # class 0 loses 0.2 in row 0, class 1 gains 0.1 in row 1
    assert drift.confidence_shift(baseline, candidate) == pytest.approx((-0.2 + 0.1) / 2)


def test_confidence_shift_on_logits_goes_through_softmax() -> None:
    baseline = np.array([[2.0, 0.0]])
    candidate = np.array([[1.0, 0.0]])
    expected = 1 / (1 + math.exp(-1)) - 1 / (1 + math.exp(-2))
    assert drift.confidence_shift(baseline, candidate) == pytest.approx(expected)


def test_a_quantized_softmax_that_no_longer_sums_to_one_is_still_read_as_probabilities() -> None:
    baseline = np.array([[0.75, 0.25]])
    candidate = np.array([[0.74, 0.25]])  # rows sum to 0.99: the baseline decides
    assert drift.confidence_shift(baseline, candidate) == pytest.approx(-0.01)


def test_compare_reports_the_worst_output_and_the_primary_class_figures() -> None:
    baseline = {"scores": np.array([[0.9, 0.1], [0.3, 0.7]]), "boxes": np.array([[1.0], [2.0]])}
    candidate = {"scores": np.array([[0.85, 0.15], [0.6, 0.4]]), "boxes": np.array([[1.0], [3.0]])}
    report = drift.compare(baseline, candidate)
    assert [output.name for output in report.outputs] == ["scores", "boxes"]
    assert report.rel_l2 == pytest.approx(1 / math.sqrt(5))
    assert report.primary.top1_agreement == 0.5
    assert report.outputs[1].top1_agreement is None  # one value per row: not a classifier
    assert report.samples == 2


def test_compare_needs_every_baseline_output() -> None:
    with pytest.raises(ValueError, match="lacks outputs"):
        drift.compare({"a": np.ones((1, 2)), "b": np.ones((1, 2))}, {"a": np.ones((1, 2))})
