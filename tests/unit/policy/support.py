"""Tiny generated ONNX models for policy tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write_mlp(path: Path, width: int = 32, batch_dim: int | str = "N", seed: int = 0, fp16: bool = False) -> Path:
    """y = relu(x @ W1) @ W2 with x [batch, width] FP32 (FP16 with ``fp16``); an int ``batch_dim`` fixes the batch."""
    dtype, elem = (np.float16, TensorProto.FLOAT16) if fp16 else (np.float32, TensorProto.FLOAT)
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.standard_normal((width, width)).astype(dtype), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((width, 4)).astype(dtype), "w2")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", elem, [batch_dim, width])],
        [helper.make_tensor_value_info("y", elem, [batch_dim, 4])],
        initializer=[w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def write_batch_one_only(path: Path, width: int = 8) -> Path:
    """Takes a dynamic batch but reshapes to [1, width]: any batch above 1 fails at run time."""
    target = numpy_helper.from_array(np.array([1, width], dtype=np.int64), "target")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "target"], ["y"])],
        "batch_one_only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])],
        initializer=[target],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path
