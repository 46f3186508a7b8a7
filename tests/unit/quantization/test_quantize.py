"""quantize_file on real models: PaddleOCR's classifier (opset 11) and the light ONNX zoo (opset 9, IR 3)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.conversion import run_onnx
from mcp2026ai.ir.onnx_import import load_onnx, onnx_signature
from mcp2026ai.quantization import QuantizeOptions, Scheme, quantize_file
from mcp2026ai.quantization.calibration import feeds, load_samples
from mcp2026ai.quantization.drift import rel_l2, top1_agreement
from mcp2026ai.quantization.preprocess import modernize


def _ops(path: Path) -> Counter[str]:
    return Counter(node.op_type for node in onnx.load(str(path)).graph.node)


def _signature(path: Path) -> object:
    return onnx_signature(load_onnx(path), path)


@pytest.fixture(scope="module")
def ocr_feeds(ocr_data: dict[str, Path]) -> list[dict[str, np.ndarray]]:
    source = bundled_model_path("ocr-cls")
    return feeds(load_samples(ocr_data["calib"], _signature(source)), _signature(source))  # type: ignore[arg-type]


def test_int8_static_writes_a_qdq_model_that_keeps_the_fp32_signature_and_agrees(
    tmp_path: Path, ocr_feeds: list[dict[str, np.ndarray]], ocr_data: dict[str, Path]
) -> None:
    source = bundled_model_path("ocr-cls")
    target = quantize_file(source, tmp_path / "int8.onnx", QuantizeOptions(scheme=Scheme.INT8_STATIC), ocr_feeds)
    ops = _ops(target)
    assert ops["QuantizeLinear"] > 50 and ops["DequantizeLinear"] > 50
    assert _signature(target) == _signature(source)
    assert target.stat().st_size < source.stat().st_size * 0.7
    x = np.load(ocr_data["val"])["x"]
    baseline = next(iter(run_onnx(source, {"x": x}).values()))
    candidate = next(iter(run_onnx(target, {"x": x}).values()))
    assert top1_agreement(baseline, candidate) >= 0.9
    assert 0 < rel_l2(baseline, candidate) < 0.5  # this small MobileNet drifts ~0.1-0.2 at int8


def test_int8_static_per_channel_quantizes_weights_along_the_output_channel(
    tmp_path: Path, ocr_feeds: list[dict[str, np.ndarray]]
) -> None:
    options = QuantizeOptions(scheme=Scheme.INT8_STATIC, per_channel=True)
    target = quantize_file(bundled_model_path("ocr-cls"), tmp_path / "pc.onnx", options, ocr_feeds[:1])
    model = onnx.load(str(target))
    scales = {init.name: init for init in model.graph.initializer}
    weight_dq = [
        node
        for node in model.graph.node
        if node.op_type == "DequantizeLinear" and any(attr.name == "axis" for attr in node.attribute)
    ]
    assert weight_dq, "per-channel dequantization carries an axis"
    assert any(len(scales[node.input[1]].dims) == 1 and scales[node.input[1]].dims[0] > 1 for node in weight_dq)


def test_int8_static_without_calibration_data_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="needs calibration data"):
        quantize_file(bundled_model_path("ocr-cls"), tmp_path / "x.onnx", QuantizeOptions(scheme=Scheme.INT8_STATIC))


def test_int8_dynamic_needs_no_calibration(tmp_path: Path, ocr_data: dict[str, Path]) -> None:
    source = bundled_model_path("ocr-cls")
    target = quantize_file(source, tmp_path / "dyn.onnx", QuantizeOptions(scheme=Scheme.INT8_DYNAMIC))
    assert _ops(target)["ConvInteger"] > 0
    x = np.load(ocr_data["val"])["x"][:8]
    assert next(iter(run_onnx(target, {"x": x}).values())).shape == (8, 2)


def test_fp16_keeps_fp32_inputs_and_outputs(tmp_path: Path, ocr_data: dict[str, Path]) -> None:
    source = bundled_model_path("ocr-cls")
    target = quantize_file(source, tmp_path / "fp16.onnx", QuantizeOptions(scheme=Scheme.FP16))
    model = onnx.load(str(target))
    constants = [attr.t for node in model.graph.node if node.op_type == "Constant" for attr in node.attribute]
    weights = [*model.graph.initializer, *constants]  # PaddleOCR's export keeps weights in Constant nodes
    assert sum(tensor.data_type == onnx.TensorProto.FLOAT16 for tensor in weights) > 50
    assert _signature(target) == _signature(source)  # FP32 in, FP32 out
    x = np.load(ocr_data["val"])["x"]
    baseline = next(iter(run_onnx(source, {"x": x}).values()))
    candidate = next(iter(run_onnx(target, {"x": x}).values()))
    assert candidate.dtype == np.float32
    assert rel_l2(baseline, candidate) < 0.01


def test_fp16_without_onnxconverter_common_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxconverter_common", None)
    monkeypatch.setitem(sys.modules, "onnxconverter_common.float16", None)
    with pytest.raises(InvalidArgumentError, match=r"pip install 'mcp2026ai\[quantization\]'"):
        quantize_file(bundled_model_path("ocr-cls"), tmp_path / "x.onnx", QuantizeOptions(scheme=Scheme.FP16))


def test_old_opset_and_ir3_models_are_modernized_before_quantizing(tmp_path: Path) -> None:
    source = bundled_model_path("onnx-squeezenet")
    original = onnx.load(str(source))
    assert original.ir_version == 3 and original.opset_import[0].version == 9
    modern = modernize(onnx.load(str(source)))
    assert modern.opset_import[0].version == 13 and modern.ir_version >= 7
    assert [value.name for value in modern.graph.input] == ["data_0"]
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    calibration = [{"data_0": x}, {"data_0": -x}]
    target = quantize_file(source, tmp_path / "sq.onnx", QuantizeOptions(scheme=Scheme.INT8_STATIC), calibration)
    assert _ops(target)["QuantizeLinear"] > 0
    assert run_onnx(target, {"data_0": x})["softmaxout_1"].shape == (1, 1000, 1, 1)
