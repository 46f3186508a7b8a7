"""Small synthetic ONNX models generated for tests (the real ones come from mcp2026ai.bundled)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(graph: onnx.GraphProto, path: Path, opset: int = 17) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def add_sub_model(path: Path, width: int = 4) -> Path:
    """Two FP32 inputs [-1, width] -> sum and difference (Triton's classic 'simple' model)."""
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", width]) for n in ("INPUT0", "INPUT1")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", width]) for n in ("OUTPUT0", "OUTPUT1")]
    nodes = [
        helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
        helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
    ]
    return _save(helper.make_graph(nodes, "add_sub", inputs, outputs), path)


def mlp_model(path: Path, features: int = 16, hidden: int = 32, classes: int = 10, seed: int = 0) -> Path:
    """A tiny MLP classifier with dynamic batch: FP32 [-1, features] -> softmax [-1, classes]."""
    rng = np.random.default_rng(seed)
    weights = {
        "w1": rng.standard_normal((features, hidden)).astype(np.float32),
        "b1": rng.standard_normal(hidden).astype(np.float32),
        "w2": rng.standard_normal((hidden, classes)).astype(np.float32),
        "b2": rng.standard_normal(classes).astype(np.float32),
    }
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes])],
        initializer=[numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    return _save(graph, path)


def int_identity_model(path: Path) -> Path:
    """INT64 and INT32 pass-through, for datatype coverage."""
    inputs = [
        helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 3]),
        helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", 3]),
    ]
    outputs = [
        helper.make_tensor_value_info("ids_out", TensorProto.INT64, ["batch", 3]),
        helper.make_tensor_value_info("mask_out", TensorProto.INT32, ["batch", 3]),
    ]
    nodes = [helper.make_node("Identity", ["ids"], ["ids_out"]), helper.make_node("Identity", ["mask"], ["mask_out"])]
    return _save(helper.make_graph(nodes, "int_identity", inputs, outputs), path)


def string_identity_model(path: Path) -> Path:
    """BYTES (ONNX string) pass-through."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["text"], ["text_out"])],
        "string_identity",
        [helper.make_tensor_value_info("text", TensorProto.STRING, ["batch"])],
        [helper.make_tensor_value_info("text_out", TensorProto.STRING, ["batch"])],
    )
    return _save(graph, path)


def slow_matmul_model(path: Path, size: int = 384, depth: int = 12, seed: int = 0) -> Path:
    """FP32 [-1, size] through ``depth`` dense layers: deliberately heavy, for drain/overload tests."""
    rng = np.random.default_rng(seed)
    initializers = []
    nodes = []
    current = "x"
    for layer in range(depth):
        weight = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
        initializers.append(numpy_helper.from_array(weight, f"w{layer}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{layer}"], [f"h{layer}"]))
        current = f"h{layer}"
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    graph = helper.make_graph(
        nodes,
        "slow_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", size])],
        initializer=initializers,
    )
    return _save(graph, path)


def chained_matmul_model(path: Path, size: int = 1024, depth: int = 600, seed: int = 0) -> Path:
    """FP32 [-1, size] through one shared [size, size] weight ``depth`` times (a 4 MiB file at 1024).

    For small batches the cost is reading the weight ``depth`` times, so each batch costs about
    the same whatever its rows: a server with a known per-batch cost for overload tests.
    """
    rng = np.random.default_rng(seed)
    weight = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    nodes = []
    current = "x"
    for layer in range(depth):
        nodes.append(helper.make_node("MatMul", [current, "w"], [f"h{layer}"]))
        current = f"h{layer}"
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    graph = helper.make_graph(
        nodes,
        "chained_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", size])],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    return _save(graph, path)
