from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.quantization.calibration import FeedReader, feeds, load_samples
from tests.unit.quantization.support import OCR_PREP, render

OCR_SIG = Signature(
    inputs=[TensorSpec(name="x", datatype="FP32", shape=[-1, 3, -1, -1])],
    outputs=[TensorSpec(name="y", datatype="FP32", shape=[-1, 2])],
)
FIXED_SIG = Signature(
    inputs=[TensorSpec(name="data", datatype="FP32", shape=[1, 3, 4, 4])],
    outputs=[TensorSpec(name="prob", datatype="FP32", shape=[1, 10])],
)
TWO_SIG = Signature(
    inputs=[TensorSpec(name="a", datatype="FP32", shape=[-1, 2]), TensorSpec(name="b", datatype="INT64", shape=[-1])],
    outputs=[TensorSpec(name="y", datatype="FP32", shape=[-1, 1])],
)


def test_one_npz_file_gives_its_samples(ocr_data: dict[str, Path]) -> None:
    samples = load_samples(ocr_data["calib"], OCR_SIG)
    assert samples["x"].shape == (16, 3, 48, 192)
    assert samples["x"].dtype == np.float32


def test_a_folder_stacks_npy_samples_with_or_without_a_batch_axis(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.random((3, 3, 4, 4), dtype=np.float32))
    np.save(tmp_path / "b.npy", rng.random((3, 4, 4), dtype=np.float32))  # one sample, no batch axis
    (tmp_path / "notes.txt").write_text("ignored")
    samples = load_samples(tmp_path, FIXED_SIG)
    assert samples["data"].shape == (4, 3, 4, 4)


def test_images_in_a_folder_go_through_the_registered_preprocessing(tmp_path: Path) -> None:
    render("upright text", False).save(tmp_path / "one.png")
    render("upside down", True).save(tmp_path / "two.png")
    samples = load_samples(tmp_path, OCR_SIG, OCR_PREP)
    assert samples["x"].shape == (2, 3, 48, 192)
    with pytest.raises(InvalidArgumentError, match="preprocessing"):
        load_samples(tmp_path, OCR_SIG, None)


def test_npz_arrays_are_matched_to_inputs_by_name_and_cast(tmp_path: Path) -> None:
    np.savez(tmp_path / "s.npz", a=np.ones((5, 2), np.float64), b=np.arange(5, dtype=np.int32))
    samples = load_samples(tmp_path / "s.npz", TWO_SIG)
    assert samples["a"].dtype == np.float32 and samples["b"].dtype == np.int64
    assert len(samples["a"]) == len(samples["b"]) == 5


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"a": np.ones((5, 2)), "c": np.ones(5)}, "'c' is not a model input"),
        ({"a": np.ones((5, 2))}, "no samples for input"),
        ({"a": np.ones((5, 3)), "b": np.ones(5, np.int64)}, "has shape \\[5, 3\\]"),
        ({"a": np.ones((5, 2)), "b": np.ones(4, np.int64)}, "different sample counts"),
        ({"a": np.ones((5, 2)), "b": np.ones(5, np.float32)}, "is float32, the model takes INT64"),
    ],
)
def test_bad_samples_are_rejected_naming_the_problem(
    tmp_path: Path, arrays: dict[str, np.ndarray], message: str
) -> None:
    np.savez(tmp_path / "s.npz", **arrays)
    with pytest.raises(InvalidArgumentError, match=message):
        load_samples(tmp_path / "s.npz", TWO_SIG)


def test_paths_that_hold_no_samples_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="no such file"):
        load_samples(tmp_path / "missing", OCR_SIG)
    with pytest.raises(InvalidArgumentError, match=r"no \.npy, \.npz or image files"):
        load_samples(tmp_path, OCR_SIG)
    np.save(tmp_path / "x.npy", np.ones((1, 2)))
    with pytest.raises(InvalidArgumentError, match=r"one \.npz file or a folder"):
        load_samples(tmp_path / "x.npy", OCR_SIG)
    np.save(tmp_path / "x.npy", np.ones((2, 2)))
    with pytest.raises(InvalidArgumentError, match=r"use \.npz files naming them"):
        load_samples(tmp_path, TWO_SIG)


def test_feeds_follow_a_fixed_batch_size_and_drop_the_remainder() -> None:
    samples = {"data": np.zeros((3, 3, 4, 4), np.float32)}
    batches = feeds(samples, FIXED_SIG, batch_size=8)
    assert [batch["data"].shape[0] for batch in batches] == [1, 1, 1]


def test_feeds_for_a_dynamic_batch_keep_the_last_partial_batch() -> None:
    samples = {"a": np.zeros((10, 2), np.float32), "b": np.zeros(10, np.int64)}
    batches = feeds(samples, TWO_SIG, batch_size=4)
    assert [len(batch["a"]) for batch in batches] == [4, 4, 2]
    assert [len(batch["b"]) for batch in batches] == [4, 4, 2]


def test_a_fixed_batch_larger_than_the_data_is_an_error() -> None:
    signature = Signature(inputs=[TensorSpec(name="data", datatype="FP32", shape=[4, 2])], outputs=OCR_SIG.outputs)
    with pytest.raises(InvalidArgumentError, match="cannot fill one batch of 4"):
        feeds({"data": np.zeros((3, 2), np.float32)}, signature)


def test_the_reader_serves_each_feed_once_and_rewinds() -> None:
    batches = [{"a": np.zeros((1, 2))}, {"a": np.ones((1, 2))}]
    reader = FeedReader(batches)
    assert reader.get_next() is batches[0]
    assert reader.get_next() is batches[1]
    assert reader.get_next() is None
    reader.rewind()
    assert reader.get_next() is batches[0]
