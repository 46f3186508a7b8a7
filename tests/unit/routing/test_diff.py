import math

import numpy as np
import pytest

from mcp2026ai.routing.diff import Observation, compare, compare_output, max_abs_diff, rel_l2, top1_agreement
from mcp2026ai.routing.outcome import Outcome

PRIMARY = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
SHADOW = np.array([[1.0, 2.0, 3.5], [6.0, 5.0, 4.0]], dtype=np.float32)


def test_known_numbers() -> None:
    assert max_abs_diff(PRIMARY.astype(np.float64), SHADOW.astype(np.float64)) == 2.0
    assert rel_l2(PRIMARY.astype(np.float64), SHADOW.astype(np.float64)) == pytest.approx(math.sqrt(8.25 / 91))
    assert top1_agreement(PRIMARY, SHADOW) == (2, 1)


def test_identical_outputs() -> None:
    diff = compare_output("scores", PRIMARY, PRIMARY.copy())
    assert diff.equal and diff.max_abs_diff == 0.0 and diff.rel_l2 == 0.0 and diff.top1_agreed == 2


def test_rel_l2_of_zero_reference() -> None:
    zeros = np.zeros(3)
    assert rel_l2(zeros, zeros) == 0.0
    assert rel_l2(zeros, np.ones(3)) == math.inf


def test_top1_only_for_2d_scores() -> None:
    assert top1_agreement(np.ones(5), np.ones(5)) == (0, 0)
    assert top1_agreement(np.ones((4, 1)), np.ones((4, 1))) == (0, 0)


@pytest.mark.parametrize(
    ("primary", "shadow", "equal"),
    [
        (PRIMARY, PRIMARY[:1], False),  # shape mismatch
        (PRIMARY, None, False),  # missing on the shadow
        (np.array([b"a", b"b"], dtype=object), np.array([b"a", b"b"], dtype=object), True),  # BYTES
    ],
)
def test_incomparable_outputs(primary: np.ndarray, shadow: np.ndarray | None, equal: bool) -> None:
    diff = compare_output("out", primary, shadow)
    assert not diff.comparable and diff.equal is equal and diff.max_abs_diff is None


def test_compare_status_latency_and_every_output() -> None:
    primary = Observation(Outcome.OK, 10.0, {"scores": PRIMARY, "extra": PRIMARY})
    shadow = Observation(Outcome.OK, 14.5, {"scores": SHADOW})
    diff = compare(primary, shadow)
    assert diff.status_match and diff.latency_delta_ms == 4.5
    assert [(o.name, o.comparable) for o in diff.outputs] == [("extra", False), ("scores", True)]


def test_failed_shadow_has_no_output_diffs() -> None:
    diff = compare(Observation(Outcome.OK, 1.0, {"scores": PRIMARY}), Observation(Outcome.SERVER_ERROR, 2.0))
    assert not diff.status_match and diff.outputs == ()
