"""Real registries holding small generated ONNX classifiers (x[N,4] -> softmax scores[N,3])."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcp2026ai.registry import ModelRegistry, Stage
from tests.support.clock import FakeClock


def classifier_onnx(path: Path, weights: np.ndarray) -> Path:
    """A real ONNX graph: scores = Softmax(x @ weights)."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["scores"], axis=1),
        ],
        "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(weights.astype(np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def weights_for(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(4, 3))


@pytest.fixture
def make_model(tmp_path: Path) -> Callable[[int], Path]:
    def build(seed: int) -> Path:
        return classifier_onnx(tmp_path / f"classifier-{seed}.onnx", weights_for(seed))

    return build


@pytest.fixture
def registry(tmp_path: Path, make_model: Callable[[int], Path]) -> Iterator[ModelRegistry]:
    """``clf`` 1.0.0 (production), 1.1.0, 1.2.0 (dev), 0.9.0 (archived); ``clf-small`` 1.0.0."""
    registry = ModelRegistry(tmp_path / "home")
    registry.register("clf", make_model(1), version="1.0.0", stage=Stage.PRODUCTION)
    registry.register("clf", make_model(2), version="1.1.0")
    registry.register("clf", make_model(3), version="1.2.0")
    registry.register("clf", make_model(4), version="0.9.0", stage=Stage.ARCHIVED)
    registry.register("clf-small", make_model(5), version="1.0.0")
    yield registry


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
