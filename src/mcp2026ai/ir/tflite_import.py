"""TFLite (.tflite) import: convert with tf2onnx, prove it against the LiteRT interpreter.

Converter chosen by measurement on the 13 MediaPipe models of ``mediapipe==0.10.21`` (the last
wheels that ship .tflite files), same random inputs through LiteRT and onnxruntime:

* tf2onnx 1.17 (with tensorflow-cpu 2.21): 9 convert and agree (max |diff| <= 1.3e-4 on detectors
  and landmarks); inputs stay NHWC, so the signature is the TFLite one. It fails on sparse weights
  (DENSIFY, 2 models) and leaves MediaPipe custom ops (Convolution2DTransposeBias, ...) as
  ``TFL_*`` nodes that onnxruntime cannot run. Costs ~1.5 GB installed and ~12 s to import.
* tflite2onnx 0.4.1: 5 convert and agree, but it rewrites 4-D inputs to NCHW (a different
  signature); it rejects HARD_SWISH and DENSIFY and crashes (IndexError) on 3 more.

Unconvertible operators are reported by name. tf2onnx, tensorflow and ai-edge-litert form the
optional extra ``pip install 'mcp2026ai[tflite]'``.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from mcp2026ai.errors import ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.ir.conversion import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    Conversion,
    compare_all,
    converted_path,
    ensure_equivalent,
    first_line,
    quiet_stdout,
    run_onnx,
)
from mcp2026ai.ir.importer import ImportedModel, register_importer
from mcp2026ai.ir.onnx_import import load_onnx, onnx_signature

OPSET = 17
# Operators tf2onnx cannot convert at all (it crashes rather than reporting them).
_KNOWN_UNSUPPORTED = {"DENSIFY": "sparse weights"}


def import_tflite(path: Path, workdir: Path) -> ImportedModel:
    """The registry's importer."""
    return convert_tflite(path, workdir).imported


def convert_tflite(path: Path, workdir: Path, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Conversion:
    """Convert ``path`` to ONNX under ``workdir`` and validate it against LiteRT on seeded inputs."""
    interpreter_cls = _interpreter_class()
    operators = _operators(interpreter_cls, path)
    for name, why in _KNOWN_UNSUPPORTED.items():
        if name in operators:
            raise ModelImportError(f"{path}: unsupported TFLite operator {name} ({why}): tf2onnx cannot convert it")
    target = converted_path(path, workdir)
    _convert(path, target)
    leftover = sorted(
        {node.op_type[4:] for node in onnx.load(str(target)).graph.node if node.op_type.startswith("TFL_")}
    )
    if leftover:
        raise ModelImportError(f"{path}: unsupported TFLite operator(s) {', '.join(leftover)}: no ONNX conversion")
    feeds, expected = _reference_run(interpreter_cls, path)
    checks = compare_all(expected, run_onnx(target, feeds), rtol, atol)
    ensure_equivalent(path, checks, rtol, atol)
    model = load_onnx(target)
    imported = ImportedModel(onnx_path=target, source_format="tflite", signature=onnx_signature(model, target))
    return Conversion(imported=imported, checks=checks)


def _interpreter_class() -> Any:
    litert = require("ai_edge_litert.interpreter", "TFLite import", ModelImportError)
    return litert.Interpreter


def _operators(interpreter_cls: Any, path: Path) -> set[str]:
    """Operator names in the model (custom ops by their own name); the file must parse."""
    try:
        interpreter = interpreter_cls(model_path=str(path))
    except (ValueError, RuntimeError) as exc:
        raise ModelImportError(f"{path}: not a valid TFLite model ({first_line(exc)})") from None
    return {str(op["op_name"]) for op in interpreter._get_ops_details()}


def _convert(path: Path, target: Path) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tf2onnx_convert = require("tf2onnx.convert", "TFLite import", ModelImportError)
    logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)  # unconverted ops are reported below, by name
    try:
        with warnings.catch_warnings(), quiet_stdout():
            warnings.simplefilter("ignore")
            tf2onnx_convert.from_tflite(str(path), opset=OPSET, output_path=str(target))
    except Exception as exc:  # tf2onnx raises ValueError, KeyError, AssertionError...  # noqa: BLE001
        raise ModelImportError(f"{path}: TFLite -> ONNX conversion failed ({first_line(exc)})") from None


def _reference_run(interpreter_cls: Any, path: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Seeded inputs and the outputs LiteRT computes for them, by tensor name."""
    interpreter = interpreter_cls(model_path=str(path))
    try:
        interpreter.allocate_tensors()
    except RuntimeError as exc:
        raise ModelImportError(f"{path}: the TFLite interpreter cannot run the model ({first_line(exc)})") from None
    rng = np.random.default_rng(0)
    feeds = {}
    for detail in interpreter.get_input_details():
        array = _example(rng, tuple(int(d) for d in detail["shape"]), np.dtype(detail["dtype"]))
        interpreter.set_tensor(detail["index"], array)
        feeds[str(detail["name"])] = array
    interpreter.invoke()
    expected = {str(d["name"]): np.array(interpreter.get_tensor(d["index"])) for d in interpreter.get_output_details()}
    return feeds, expected


def _example(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float64).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, 0), min(info.max, 255), size=shape, endpoint=True).astype(dtype)
    return (rng.random(shape) < 0.5).astype(dtype)


register_importer(".tflite", import_tflite)
