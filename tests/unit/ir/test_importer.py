"""Model import: signatures of valid models, one-line errors naming the file for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir import ImportedModel, Signature, TensorSpec, import_model, supported_suffixes
from mcp2026ai.ir import importer as importer_module
from tests.support.onnx_models import (
    build_complex_input,
    build_empty_graph,
    build_legacy_initializer_input,
    build_sequence_input,
    build_unknown_op,
)


def test_mlp_signature(mlp_path: Path, tmp_path: Path) -> None:
    imported = import_model(mlp_path, tmp_path / "work")
    assert imported.onnx_path == mlp_path
    assert imported.source_format == "onnx"
    assert imported.signature.inputs == [TensorSpec(name="x", datatype="FP32", shape=[-1, 4])]
    assert imported.signature.outputs == [TensorSpec(name="y", datatype="FP32", shape=[-1, 3])]
    assert imported.signature.batchable


def test_two_input_signature(two_input_path: Path, tmp_path: Path) -> None:
    signature = import_model(two_input_path, tmp_path).signature
    assert [spec.name for spec in signature.inputs] == ["a", "b"]
    assert [spec.name for spec in signature.outputs] == ["sum", "prod"]
    assert all(spec.shape == [-1, 3] for spec in [*signature.inputs, *signature.outputs])


def test_int64_signature(int64_path: Path, tmp_path: Path) -> None:
    signature = import_model(int64_path, tmp_path).signature
    assert signature.inputs[0].datatype == "INT64"
    assert signature.outputs[0].datatype == "INT64"


def test_initializers_listed_as_inputs_are_not_inputs(tmp_path: Path) -> None:
    path = build_legacy_initializer_input(tmp_path / "legacy.onnx")
    signature = import_model(path, tmp_path).signature
    assert [spec.name for spec in signature.inputs] == ["x"]


def test_path_given_as_string(mlp_path: Path, tmp_path: Path) -> None:
    assert import_model(str(mlp_path), tmp_path).signature.inputs[0].name == "x"


def test_suffix_is_case_insensitive(mlp_path: Path, tmp_path: Path) -> None:
    upper = mlp_path.rename(tmp_path / "MLP.ONNX")
    assert import_model(upper, tmp_path).source_format == "onnx"


@pytest.mark.parametrize(
    ("name", "shape"),
    [("ocr-cls", [-1, 3, -1, -1]), ("onnx-squeezenet", [1, 3, 224, 224]), ("onnx-resnet50", [1, 3, 224, 224])],
)
def test_real_bundled_models_import(name: str, shape: list[int], tmp_path: Path) -> None:
    signature = import_model(bundled_model_path(name), tmp_path).signature
    assert len(signature.inputs) == 1
    assert signature.inputs[0].datatype == "FP32"
    assert signature.inputs[0].shape == shape


def _import_error(path: Path, tmp_path: Path) -> str:
    with pytest.raises(ModelImportError) as info:
        import_model(path, tmp_path / "work")
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message
    return message


def test_missing_path(tmp_path: Path) -> None:
    assert _import_error(tmp_path / "absent.onnx", tmp_path).endswith(": no such file")


def test_directory(tmp_path: Path) -> None:
    directory = tmp_path / "model.onnx"
    directory.mkdir()
    assert _import_error(directory, tmp_path).endswith(": not a regular file")


@pytest.mark.parametrize(
    "garbage",
    [b"this is not an onnx model at all", b"\x08\x07\x12\xff\xff\xff\xff\xff\xff\xff", bytes(range(256)) * 4],
    ids=["text", "truncated-varint", "binary"],
)
def test_corrupt_bytes(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "corrupt.onnx"
    path.write_bytes(garbage)
    assert "not a valid ONNX model" in _import_error(path, tmp_path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    assert "the graph has no nodes" in _import_error(path, tmp_path)


def test_empty_graph(tmp_path: Path) -> None:
    path = build_empty_graph(tmp_path / "empty-graph.onnx")
    assert "the graph has no nodes" in _import_error(path, tmp_path)


def test_checker_rejects_unknown_operator(tmp_path: Path) -> None:
    path = build_unknown_op(tmp_path / "unknown-op.onnx")
    assert "ONNX checker rejected the model" in _import_error(path, tmp_path)


@pytest.mark.parametrize("name", ["model.h5", "model.bin", "model"])
def test_unsupported_suffix(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"weights")
    message = _import_error(path, tmp_path)
    assert "unsupported model format" in message
    assert "(supported: " in message and ".onnx" in message


def test_unsupported_tensor_type(tmp_path: Path) -> None:
    path = build_complex_input(tmp_path / "complex.onnx")
    message = _import_error(path, tmp_path)
    assert "'z'" in message and "COMPLEX64" in message


def test_non_tensor_input(tmp_path: Path) -> None:
    path = build_sequence_input(tmp_path / "sequence.onnx")
    message = _import_error(path, tmp_path)
    assert "'seq' is not a tensor" in message


def test_register_importer_plugs_in_a_format(mlp_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer_module, "_IMPORTERS", dict(importer_module._IMPORTERS))
    seen: list[tuple[Path, Path]] = []

    def fake_format(path: Path, workdir: Path) -> ImportedModel:
        seen.append((path, workdir))
        signature = Signature(inputs=[TensorSpec(name="x", datatype="FP32", shape=[-1, 4])], outputs=[])
        return ImportedModel(onnx_path=mlp_path, source_format="toy", signature=signature)

    importer_module.register_importer(".TOY", fake_format)
    assert ".toy" in supported_suffixes()
    source = tmp_path / "model.toy"
    source.write_bytes(b"toy")
    imported = import_model(source, tmp_path / "work")
    assert imported.source_format == "toy"
    assert seen == [(source, tmp_path / "work")]


def test_supported_suffixes_include_onnx() -> None:
    assert ".onnx" in supported_suffixes()
