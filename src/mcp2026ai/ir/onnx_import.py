"""ONNX import: load, check, infer shapes and extract the signature."""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, ValueInfoProto

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.dtypes import onnx_elem_to_v2
from mcp2026ai.ir.signature import Signature, TensorSpec


def load_onnx(path: Path) -> ModelProto:
    """Parse and check an ONNX file; one-line ModelImportError naming the file otherwise."""
    try:
        model = onnx.load(str(path))
    except (DecodeError, ValueError, RuntimeError, OSError, onnx.checker.ValidationError) as exc:  # external data
        raise ModelImportError(f"{path}: not a valid ONNX model ({_first_line(exc)})") from None
    if not model.graph.node:
        raise ModelImportError(f"{path}: not a valid ONNX model (the graph has no nodes)")
    try:
        onnx.checker.check_model(str(path))
    except onnx.checker.ValidationError as exc:
        raise ModelImportError(f"{path}: ONNX checker rejected the model ({_first_line(exc)})") from None
    return model


def onnx_signature(model: ModelProto, path: Path) -> Signature:
    """Inputs (minus initializers) and outputs, after shape inference."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:  # onnx raises several unrelated types here  # noqa: BLE001
        raise ModelImportError(f"{path}: shape inference failed ({_first_line(exc)})") from None
    initializers = {init.name for init in inferred.graph.initializer}
    inputs = [_tensor_spec(v, path) for v in inferred.graph.input if v.name not in initializers]
    outputs = [_tensor_spec(v, path) for v in inferred.graph.output]
    if not inputs or not outputs:
        raise ModelImportError(f"{path}: the graph declares no inputs or no outputs")
    return Signature(inputs=inputs, outputs=outputs)


def _tensor_spec(value: ValueInfoProto, path: Path) -> TensorSpec:
    if not value.type.HasField("tensor_type"):
        raise ModelImportError(f"{path}: {value.name!r} is not a tensor; only tensor inputs/outputs are supported")
    tensor = value.type.tensor_type
    datatype = onnx_elem_to_v2(tensor.elem_type, f"{path}: {value.name!r}")
    shape = [dim.dim_value if dim.HasField("dim_value") else -1 for dim in tensor.shape.dim]
    return TensorSpec(name=value.name, datatype=datatype, shape=shape)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
