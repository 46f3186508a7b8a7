"""Rendered text images for the OCR direction classifier, via scripts/make_text_image.py."""

from __future__ import annotations

import importlib.util
import io
from types import ModuleType

from PIL import Image

from tests.support import REPO_ROOT


def _load_script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "make_text_image.py"
    spec = importlib.util.spec_from_file_location("make_text_image", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SCRIPT = _load_script()


def render_text(text: str = "Contract-driven inference", rotate: bool = False) -> Image.Image:
    image: Image.Image = _SCRIPT.render(text, rotate)
    return image


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
