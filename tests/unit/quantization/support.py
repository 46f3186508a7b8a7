"""Deterministic data for the quantization tests: rendered text lines for PaddleOCR's classifier."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType

import numpy as np
from PIL import Image

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING
from mcp2026ai.imaging import image_to_tensor
from mcp2026ai.registry import Preprocessing

REPO_ROOT = Path(__file__).resolve().parents[3]
WORDS = ["contract", "inference", "latency", "budget", "model", "registry", "quantized", "drift", "signature"]
OCR_PREP = Preprocessing(**OCR_CLS_PREPROCESSING)


def _render_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_text_image", REPO_ROOT / "scripts" / "make_text_image.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SCRIPT = _render_script()


def render(text: str, rotate: bool) -> Image.Image:
    """scripts/make_text_image.py's rendering of one line of text."""
    image: Image.Image = _SCRIPT.render(text, rotate)
    return image


def text_lines(count: int, seed: int) -> np.ndarray:
    """``count`` rendered text lines (odd ones upside down) as an NCHW float32 batch for ocr-cls."""
    rng = random.Random(seed)
    tensors = []
    for index in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        tensors.append(image_to_tensor(render(text, index % 2 == 1), OCR_PREP))
    return np.concatenate(tensors)
