"""Small synthetic ONNX models written with onnx.helper (fast to build, fast to run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def save_model(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="mcp-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _weights(name: str, shape: tuple[int, ...], seed: int) -> onnx.TensorProto:
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(values, name)


def build_mlp(path: Path, seed: int = 0) -> Path:
    """x FP32 [N, 4] -> Gemm -> Relu -> Gemm -> y FP32 [N, 3]; the batch dimension is dynamic."""
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["hr"]),
            helper.make_node("Gemm", ["hr", "w2", "b2"], ["y"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        initializer=[
            _weights("w1", (4, 8), seed),
            _weights("b1", (8,), seed + 1),
            _weights("w2", (8, 3), seed + 2),
            _weights("b2", (3,), seed + 3),
        ],
    )
    return save_model(graph, path)


def build_two_input(path: Path) -> Path:
    """a, b FP32 [N, 3] -> sum = a + b, prod = a * b."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Mul", ["a", "b"], ["prod"])],
        "two_input",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 3]),
        ],
        [
            helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("prod", TensorProto.FLOAT, ["N", 3]),
        ],
    )
    return save_model(graph, path)


def build_int64(path: Path) -> Path:
    """ids INT64 [N, 5] -> doubled = ids * 2 (INT64 [N, 5])."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["ids", "two"], ["doubled"])],
        "int64",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 5])],
        [helper.make_tensor_value_info("doubled", TensorProto.INT64, ["N", 5])],
        initializer=[numpy_helper.from_array(np.array(2, dtype=np.int64), "two")],
    )
    return save_model(graph, path)


def build_empty_graph(path: Path) -> Path:
    """A well-formed ModelProto whose graph has no nodes (bypasses the checker on purpose)."""
    graph = helper.make_graph(
        [],
        "empty",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.save(model, str(path))
    return path


def build_unknown_op(path: Path) -> Path:
    """Parses fine, but the checker rejects an operator that does not exist."""
    graph = helper.make_graph(
        [helper.make_node("NoSuchOperator", ["x"], ["y"])],
        "unknown_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.save(model, str(path))
    return path


def build_legacy_initializer_input(path: Path) -> Path:
    """Old exporters list weights among graph inputs too; the signature must leave them out."""
    weight = numpy_helper.from_array(np.ones((2, 2), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "legacy",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        initializer=[weight],
    )
    return save_model(graph, path)


def build_complex_input(path: Path) -> Path:
    """A COMPLEX64 input: valid ONNX, but no KServe v2 datatype exists for it."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["z"], ["out"])],
        "complex",
        [helper.make_tensor_value_info("z", TensorProto.COMPLEX64, [1])],
        [helper.make_tensor_value_info("out", TensorProto.COMPLEX64, [1])],
    )
    return save_model(graph, path)


def build_sequence_input(path: Path) -> Path:
    """A sequence-of-tensors input: not a plain tensor, so not servable."""
    graph = helper.make_graph(
        [helper.make_node("SequenceLength", ["seq"], ["n"])],
        "sequence",
        [helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
    )
    return save_model(graph, path)
