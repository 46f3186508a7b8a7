"""Real trained models located inside installed PyPI packages."""

from __future__ import annotations

import pytest

from mcp2026ai import bundled
from mcp2026ai.bundled import bundled_model_path, bundled_names
from mcp2026ai.errors import NotFoundError


def test_names() -> None:
    names = bundled_names()
    assert names[:3] == ["ocr-cls", "ocr-det", "ocr-rec"]
    assert "onnx-resnet50" in names and "onnx-squeezenet" in names


@pytest.mark.parametrize("name", ["ocr-cls", "onnx-squeezenet", "onnx-resnet50"])
def test_paths_exist(name: str) -> None:
    path = bundled_model_path(name)
    assert path.suffix == ".onnx" and path.is_file() and path.stat().st_size > 1000


def test_ocr_cls_comes_from_rapidocr() -> None:
    path = bundled_model_path("ocr-cls")
    assert path.name == "ch_ppocr_mobile_v2.0_cls_infer.onnx"
    assert "rapidocr_onnxruntime" in path.parts


@pytest.mark.parametrize("name", ["resnet50", "onnx-", "onnx-nope", "ocr"])
def test_unknown_name_lists_the_known_ones(name: str) -> None:
    with pytest.raises(NotFoundError, match=rf"no bundled model '{name}' \(known: ocr-cls, "):
        bundled_model_path(name)


def test_missing_package_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundled.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(NotFoundError, match=r"package 'rapidocr_onnxruntime' is not installed \(pip install --no-deps"):
        bundled_model_path("ocr-cls")
