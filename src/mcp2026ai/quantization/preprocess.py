"""Make an ONNX model quantizable: modern opset and IR, then onnxruntime's quantization pre-processing.

Old exports (the ONNX light zoo is opset 9 / IR 3, PaddleOCR's classifier opset 11) break the
quantizer: per-channel QDQ needs opset 13, and IR 3 lists every initializer as a graph input,
which calibration then asks to be fed. ``quant_pre_process`` (symbolic shape inference, graph
optimisation, shape inference) follows; where symbolic shape inference cannot handle the graph
(PaddleOCR's classifier trips an assertion on a Concat), it reruns without that step.
"""

from __future__ import annotations

import logging
from pathlib import Path

import onnx
from onnx import ModelProto, version_converter
from onnxruntime.quantization.shape_inference import quant_pre_process

from mcp2026ai.errors import InvalidArgumentError

MIN_OPSET = 13
MIN_IR_VERSION = 7
_LAYOUT_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Cast"}
log = logging.getLogger(__name__)


def modernize(model: ModelProto) -> ModelProto:
    """Opset >= 13, IR >= 7, and initializers no longer listed as graph inputs."""
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 0)
    if opset < MIN_OPSET:
        try:
            model = version_converter.convert_version(model, MIN_OPSET)
        except Exception as exc:  # the converter raises bare RuntimeErrors and ValueErrors  # noqa: BLE001
            raise InvalidArgumentError(f"cannot upgrade the model from opset {opset} to {MIN_OPSET} ({exc})") from None
    initializers = {init.name for init in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initializers]
    del model.graph.input[:]
    model.graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, MIN_IR_VERSION)
    for index, node in enumerate(model.graph.node):
        node.name = node.name or f"{node.op_type}_{index}"  # the quantizer excludes nodes by name
    return model


def output_nodes(path: Path) -> list[str]:
    """Nodes that compute the graph outputs: the last real op (a Softmax, say) and any reshaping after it.

    Quantizing them gains no speed but costs accuracy: onnxruntime quantizes a Softmax output over a
    fixed [0, 1] range in steps of 1/255, which rounds small probabilities to zero.
    """
    graph = onnx.load(str(path), load_external_data=False).graph
    producer = {output: node for node in graph.node for output in node.output}
    kept: list[str] = []
    pending = [producer[value.name] for value in graph.output if value.name in producer]
    while pending:
        node = pending.pop()
        if node.name in kept:
            continue
        kept.append(node.name)
        if node.op_type in _LAYOUT_OPS and node.input and node.input[0] in producer:
            pending.append(producer[node.input[0]])
    return kept


def prepare(source: Path, target: Path) -> Path:
    """Write the modernised, pre-processed model to ``target`` (the input of int8 quantization)."""
    modern = target.with_name(target.stem + ".modern.onnx")
    onnx.save(modernize(onnx.load(str(source))), str(modern))
    try:
        quant_pre_process(str(modern), str(target))
    except Exception as exc:  # symbolic shape inference asserts on graphs it does not know  # noqa: BLE001
        log.info("symbolic shape inference failed (%s: %s); pre-processing without it", type(exc).__name__, exc)
        quant_pre_process(str(modern), str(target), skip_symbolic_shape=True)
    finally:
        modern.unlink(missing_ok=True)
    return target
