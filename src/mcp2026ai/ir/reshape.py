"""Triton's ``reshape``: a tensor the client sees in one shape and the model takes (or gives) in another.

Triton reshapes at the edge of the backend; here the ONNX graph itself is wrapped once, at import,
so that the stored model's signature is what clients see and every runtime and plan serves it
unchanged: a wrapped input is a new graph input of the client's shape feeding a ``Reshape`` to the
model's; a wrapped output is the model's tensor renamed and reshaped to the client's. A batched
model (Triton's ``max_batch_size`` > 0) keeps its leading dimension: ``[-1, *reshape]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import ModelProto, TensorProto, helper

from mcp2026ai.errors import ModelImportError

_SUFFIX = "__mcp_reshaped"


@dataclass(frozen=True)
class Reshape:
    """One tensor: the shape clients use (``dims``) and the one the model uses (``reshape``), both
    without the batch dimension; ``batched`` prepends it to both."""

    name: str
    dims: tuple[int, ...]
    reshape: tuple[int, ...]
    batched: bool

    def declared(self) -> list[int]:
        """The client's shape as the graph declares it (-1: the batch)."""
        return [-1, *self.dims] if self.batched else list(self.dims)

    def target(self, shape: tuple[int, ...]) -> list[int]:
        """A ``Reshape`` node's shape operand: 0 keeps the incoming batch size (a -1 in ``shape`` stays free)."""
        return [0, *shape] if self.batched else list(shape)


def wrap_reshapes(source: Path, target: Path, inputs: list[Reshape], outputs: list[Reshape]) -> Path:
    """Write ``source`` to ``target`` with ``inputs`` and ``outputs`` reshaped as described."""
    model = onnx.load(str(source))
    for spec in inputs:
        _wrap_input(model, spec, source)
    for spec in outputs:
        _wrap_output(model, spec, source)
    onnx.save(model, str(target))
    return target


def _shape_constant(name: str, shape: list[int]) -> onnx.NodeProto:
    """A Constant node (not an initializer: IR version 3 graphs would want it among the inputs too)."""
    value = helper.make_tensor(name, TensorProto.INT64, [len(shape)], shape)
    return helper.make_node("Constant", [], [name], value=value)


def _wrap_input(model: ModelProto, spec: Reshape, source: Path) -> None:
    graph = model.graph
    original = next((value for value in graph.input if value.name == spec.name), None)
    if original is None:
        raise ModelImportError(f"{source}: reshape names input {spec.name!r}, which the model lacks")
    inner = spec.name + _SUFFIX
    for node in graph.node:
        node.input[:] = [inner if name == spec.name else name for name in node.input]
    shape = _shape_constant(inner + "_shape", spec.target(spec.reshape))
    reshape = helper.make_node("Reshape", [spec.name, shape.output[0]], [inner])
    graph.node.insert(0, reshape)
    graph.node.insert(0, shape)
    original.type.tensor_type.shape.Clear()
    original.type.tensor_type.shape.dim.extend(_dims(spec.declared()))


def _wrap_output(model: ModelProto, spec: Reshape, source: Path) -> None:
    graph = model.graph
    original = next((value for value in graph.output if value.name == spec.name), None)
    if original is None:
        raise ModelImportError(f"{source}: reshape names output {spec.name!r}, which the model lacks")
    inner = spec.name + _SUFFIX
    for node in graph.node:
        node.output[:] = [inner if name == spec.name else name for name in node.output]
        node.input[:] = [inner if name == spec.name else name for name in node.input]
    shape = _shape_constant(inner + "_shape", spec.target(spec.dims))
    graph.node.extend([shape, helper.make_node("Reshape", [inner, shape.output[0]], [spec.name])])
    original.type.tensor_type.shape.Clear()
    original.type.tensor_type.shape.dim.extend(_dims(spec.declared()))


def _dims(shape: list[int]) -> list[onnx.TensorShapeProto.Dimension]:
    dims = []
    for size in shape:
        dim = onnx.TensorShapeProto.Dimension()
        if size >= 0:
            dim.dim_value = size
        else:
            dim.dim_param = "batch"
        dims.append(dim)
    return dims
