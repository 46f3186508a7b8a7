"""Fixtures for the scheduler tests: small generated ONNX models built with onnx.helper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mcp2026ai.ir import import_model
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend

MLP_IN, MLP_HIDDEN, MLP_OUT = 8, 16, 4


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _mlp(batch: int | str) -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    weights = [
        numpy_helper.from_array(rng.standard_normal((MLP_IN, MLP_HIDDEN)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal(MLP_HIDDEN).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((MLP_HIDDEN, MLP_OUT)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(MLP_OUT).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["hidden"]),
        helper.make_node("MatMul", ["hidden", "w2"], ["l0"]),
        helper.make_node("Add", ["l0", "b2"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, MLP_IN])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, MLP_OUT]),
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [batch, MLP_HIDDEN]),
        ],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _one_row_only() -> onnx.ModelProto:
    """Reshape to [1, 4]: runs on one row, fails in onnxruntime on a batch of several."""
    shape = numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "one_row_only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [shape],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _backend(path: Path, signature: Signature | None = None) -> OnnxRuntimeBackend:
    imported = import_model(path, path.parent)
    backend = OnnxRuntimeBackend(imported.onnx_path, signature or imported.signature)
    backend.load()
    return backend


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sched-models")


@pytest.fixture(scope="session")
def mlp_path(model_dir: Path) -> Path:
    return _save(_mlp("N"), model_dir / "mlp.onnx")


@pytest.fixture()
def mlp_backend(mlp_path: Path) -> Iterator[OnnxRuntimeBackend]:
    backend = _backend(mlp_path)
    yield backend
    backend.unload()


@pytest.fixture()
def fixed_mlp_backend(model_dir: Path) -> Iterator[OnnxRuntimeBackend]:
    backend = _backend(_save(_mlp(1), model_dir / "mlp_fixed.onnx"))
    yield backend
    backend.unload()


@pytest.fixture()
def one_row_backend(model_dir: Path) -> Iterator[OnnxRuntimeBackend]:
    signature = Signature(
        inputs=[TensorSpec(name="x", datatype="FP32", shape=[-1, 4])],
        outputs=[TensorSpec(name="y", datatype="FP32", shape=[-1, 4])],
    )
    backend = _backend(_save(_one_row_only(), model_dir / "one_row.onnx"), signature)
    yield backend
    backend.unload()


@pytest.fixture()
def model_name(request: pytest.FixtureRequest) -> str:
    """A metrics label unique to the test."""
    return request.node.name
