"""Pure batch assembly: merging, splitting and the batch-size choice."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.errors import InferenceFailedError, InvalidInputError
from mcp2026ai.scheduling.assemble import (
    choose_batch,
    merge_inputs,
    request_rows,
    select_outputs,
    shape_key,
    split_outputs,
    union_outputs,
)


def _request(rows: int, start: float, width: int = 3) -> dict[str, np.ndarray]:
    x = np.arange(start, start + rows * width, dtype=np.float32).reshape(rows, width)
    return {"x": x, "ids": np.arange(rows, dtype=np.int64)[:, None]}


def test_rows_are_the_shared_leading_dimension() -> None:
    assert request_rows(_request(3, 0)) == 3


def test_inputs_disagreeing_on_rows_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="disagree on the batch dimension"):
        request_rows({"a": np.zeros((2, 1)), "b": np.zeros((3, 1))})


def test_scalar_input_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="'a' is a scalar"):
        request_rows({"a": np.float32(1.0).reshape(())})


def test_shape_key_ignores_rows_only() -> None:
    assert shape_key(_request(1, 0)) == shape_key(_request(5, 9))
    assert shape_key(_request(1, 0)) != shape_key(_request(1, 0, width=4))
    as_float64 = {name: array.astype(np.float64) for name, array in _request(1, 0).items()}
    assert shape_key(_request(1, 0)) != shape_key(as_float64)


def test_merge_then_split_round_trips_multi_row_requests() -> None:
    requests = [_request(2, 0), _request(1, 100), _request(3, 200)]
    merged, offsets = merge_inputs(requests)
    assert offsets == [0, 2, 3, 6]
    assert merged["x"].shape == (6, 3)
    outputs = {"y": merged["x"] * 2, "z": merged["ids"] + 1}
    parts = split_outputs(outputs, offsets, [None, ["y"], ["z", "y"]])
    for request, part in zip(requests, parts, strict=True):
        np.testing.assert_array_equal(part["y"], request["x"] * 2)
    assert set(parts[0]) == {"y", "z"}
    assert list(parts[1]) == ["y"]
    assert list(parts[2]) == ["z", "y"]
    np.testing.assert_array_equal(parts[2]["z"], requests[2]["ids"] + 1)


def test_single_request_merge_is_a_pass_through() -> None:
    request = _request(2, 0)
    merged, offsets = merge_inputs([request])
    assert merged["x"] is request["x"]
    assert offsets == [0, 2]


def test_split_refuses_outputs_without_the_batch_rows() -> None:
    with pytest.raises(InferenceFailedError, match="output 'y' has 1 rows; the batch had 3 rows"):
        split_outputs({"y": np.zeros((1, 2))}, [0, 1, 3], [None, None])


def test_union_of_requested_outputs() -> None:
    assert union_outputs([["a"], ["b", "a"]]) == ["a", "b"]
    assert union_outputs([["a"], None]) is None
    assert select_outputs({"a": np.zeros(1), "b": np.ones(1)}, ["b"]).keys() == {"b"}


def test_preferred_size_reached_dispatches_at_once() -> None:
    assert choose_batch([1, 1, 1, 1, 1], 16, [4, 8]) == 4
    assert choose_batch([6, 1], 4) == 1  # a request wider than the merge limit runs alone
    assert choose_batch([2, 2, 4, 1], 16, [4, 8]) == 3


def test_without_preferred_sizes_max_batch_size_is_the_target() -> None:
    assert choose_batch([4, 4, 4, 4], 16) == 4
    assert choose_batch([4, 4], 16) == 0


def test_waits_until_the_window_elapses() -> None:
    assert choose_batch([1, 2], 16, [8]) == 0
    assert choose_batch([1, 2], 16, [8], window_elapsed=True) == 2


def test_never_exceeds_max_batch_size_rows() -> None:
    count = choose_batch([3, 3, 3, 3], 8, window_elapsed=True)
    assert count == 2
    assert choose_batch([3, 3, 3, 3], 8, [7]) == 2, "the next request does not fit, so the batch goes"


def test_a_blocked_run_dispatches_without_waiting() -> None:
    assert choose_batch([1, 1], 16, [8], more_waiting=True) == 2


def test_nothing_queued_means_nothing_to_dispatch() -> None:
    assert choose_batch([], 8, window_elapsed=True) == 0
