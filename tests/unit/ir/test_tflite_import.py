"""TFLite -> ONNX on MediaPipe's real models (mediapipe 0.10.21 ships them), checked against LiteRT."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir import import_model, supported_suffixes
from mcp2026ai.ir.conversion import Conversion, run_onnx
from mcp2026ai.ir.tflite_import import convert_tflite
from mcp2026ai.registry import ModelRegistry

pytest.importorskip("tf2onnx")
litert = pytest.importorskip("ai_edge_litert.interpreter")
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def mediapipe_model(relative: str) -> Path:
    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("mediapipe is not installed (make test installs 0.10.21 with --no-deps for its models)")
    path = Path(next(iter(spec.submodule_search_locations))) / "modules" / relative
    if not path.exists():
        pytest.skip(f"{path} is missing (mediapipe 1.x wheels no longer ship .tflite files; use 0.10.21)")
    return path


FACE = "face_detection/face_detection_short_range.tflite"


@pytest.fixture(scope="module")
def face_detector(tmp_path_factory: pytest.TempPathFactory) -> Conversion:
    return convert_tflite(mediapipe_model(FACE), tmp_path_factory.mktemp("tflite"))


def test_tflite_suffix_is_registered() -> None:
    assert ".tflite" in supported_suffixes()


def test_face_detector_keeps_its_nhwc_signature_and_matches_litert(face_detector: Conversion) -> None:
    signature = face_detector.imported.signature
    assert face_detector.imported.source_format == "tflite"
    assert [(s.name, s.shape, s.datatype) for s in signature.inputs] == [("input", [1, 128, 128, 3], "FP32")]
    assert [(s.name, s.shape) for s in signature.outputs] == [
        ("regressors", [1, 896, 16]),
        ("classificators", [1, 896, 1]),
    ]
    assert [check.name for check in face_detector.checks] == ["regressors", "classificators"]
    assert all(check.passed and check.rel_l2 < 1e-4 for check in face_detector.checks)


def test_a_second_input_agrees_too(face_detector: Conversion) -> None:
    interpreter = litert.Interpreter(model_path=str(mediapipe_model(FACE)))
    interpreter.allocate_tensors()
    image = np.linspace(-1, 1, 128 * 128 * 3, dtype=np.float32).reshape(1, 128, 128, 3)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image)
    interpreter.invoke()
    expected = {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}
    got = run_onnx(face_detector.imported.onnx_path, {"input": image})
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-3, atol=1e-3)


def test_the_registry_imports_a_tflite_file(face_detector: Conversion, tmp_path: Path) -> None:
    record = ModelRegistry(tmp_path / "home").register("face", mediapipe_model(FACE))
    assert record.format == "tflite" and record.signature == face_detector.imported.signature


def test_an_unconvertible_custom_operator_is_named(tmp_path: Path) -> None:
    path = mediapipe_model("selfie_segmentation/selfie_segmentation.tflite")
    with pytest.raises(ModelImportError, match=r"unsupported TFLite operator\(s\) Convolution2DTransposeBias"):
        convert_tflite(path, tmp_path)


def test_sparse_weights_are_refused_before_converting(tmp_path: Path) -> None:
    path = mediapipe_model("face_detection/face_detection_full_range_sparse.tflite")
    with pytest.raises(ModelImportError, match=r"unsupported TFLite operator DENSIFY \(sparse weights\)"):
        convert_tflite(path, tmp_path)


def test_a_file_that_is_not_tflite_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "junk.tflite"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelImportError, match=r"junk\.tflite: not a valid TFLite model"):
        import_model(path, tmp_path)


def test_without_litert_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    path = tmp_path / "m.tflite"
    path.write_bytes(b"x")
    with pytest.raises(ModelImportError, match=r"pip install 'mcp2026ai\[tflite\]'"):
        import_model(path, tmp_path)
