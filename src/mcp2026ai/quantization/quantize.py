"""Quantize one ONNX file: int8 static (QDQ, calibrated), int8 dynamic, or fp16.

* int8-static: :func:`~mcp2026ai.quantization.preprocess.prepare`, then onnxruntime's
  ``quantize_static`` in QDQ format, signed int8 activations and weights (S8S8; U8S8 saturates on
  AVX2 CPUs without VNNI), per-tensor or per-channel weights, MinMax/Entropy/Percentile calibration.
* int8-dynamic: ``quantize_dynamic`` (weights int8 ahead of time, activations at run time) with
  onnxruntime's default operator set. It suits MatMul-heavy models (transformers, RNNs); on CNNs
  its ConvInteger kernels are slower than fp32 (see benchmarks/engine/quantization_bench.py).
* fp16: onnxconverter-common's ``convert_float_to_float16`` with ``keep_io_types=True``, so inputs
  and outputs stay FP32 and the signature does not change (optional extra ``[quantization]``).
"""

from __future__ import annotations

import tempfile
import warnings
from enum import StrEnum
from pathlib import Path

import onnx
from onnxruntime.quantization import CalibrationMethod as OrtCalibrationMethod
from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
from pydantic import BaseModel, ConfigDict

from mcp2026ai.contract import Precision
from mcp2026ai.errors import InvalidArgumentError, MCPError, ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.ir.conversion import first_line, quiet_stdout
from mcp2026ai.quantization.calibration import Feed, FeedReader
from mcp2026ai.quantization.preprocess import modernize, output_nodes, prepare


class Scheme(StrEnum):
    INT8_STATIC = "int8-static"
    INT8_DYNAMIC = "int8-dynamic"
    FP16 = "fp16"

    @property
    def precision(self) -> Precision:
        return Precision.FP16 if self is Scheme.FP16 else Precision.INT8

    @property
    def needs_calibration(self) -> bool:
        return self is Scheme.INT8_STATIC


class CalibrationMethod(StrEnum):
    MINMAX = "minmax"
    ENTROPY = "entropy"
    PERCENTILE = "percentile"


_ORT_METHODS = {
    CalibrationMethod.MINMAX: OrtCalibrationMethod.MinMax,
    CalibrationMethod.ENTROPY: OrtCalibrationMethod.Entropy,
    CalibrationMethod.PERCENTILE: OrtCalibrationMethod.Percentile,
}


class QuantizeOptions(BaseModel):
    """What to produce; per_channel and calibrate_method apply to the int8 schemes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scheme: Scheme
    per_channel: bool = False
    calibrate_method: CalibrationMethod = CalibrationMethod.MINMAX


def quantize_file(source: Path, target: Path, options: QuantizeOptions, calibration: list[Feed] | None = None) -> Path:
    """Write the quantized model of ``source`` to ``target``."""
    if options.scheme.needs_calibration and not calibration:
        raise InvalidArgumentError(f"scheme {options.scheme.value} needs calibration data (--calib-data DIR|file.npz)")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-quant-") as tmp, warnings.catch_warnings(), quiet_stdout():
            warnings.simplefilter("ignore")
            if options.scheme is Scheme.FP16:
                _to_fp16(source, target)
            else:
                prepared = prepare(source, Path(tmp) / "prepared.onnx")
                _to_int8(prepared, target, options, calibration or [])
    except MCPError:
        raise
    except Exception as exc:  # onnxruntime.quantization raises many unrelated types  # noqa: BLE001
        raise ModelImportError(f"{source}: {options.scheme.value} quantization failed ({first_line(exc)})") from None
    return target


def _to_int8(prepared: Path, target: Path, options: QuantizeOptions, calibration: list[Feed]) -> None:
    if options.scheme is Scheme.INT8_DYNAMIC:
        quantize_dynamic(prepared, target, per_channel=options.per_channel, weight_type=QuantType.QInt8)
        return
    quantize_static(
        prepared,
        target,
        FeedReader(calibration),
        quant_format=QuantFormat.QDQ,
        per_channel=options.per_channel,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=_ORT_METHODS[options.calibrate_method],
        nodes_to_exclude=output_nodes(prepared),
    )


def _to_fp16(source: Path, target: Path) -> None:
    float16 = require("onnxconverter_common.float16", "fp16 conversion")
    model = modernize(onnx.load(str(source)))
    onnx.save(float16.convert_float_to_float16(model, keep_io_types=True), str(target))
