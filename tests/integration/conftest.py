from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.registry import ModelRegistry, Preprocessing
from support.models import add_sub_model, mlp_model


@pytest.fixture()
def registry(tmp_path: Path) -> ModelRegistry:
    registry = ModelRegistry(tmp_path / "home")
    registry.register(
        "ocr-cls", bundled_model_path("ocr-cls"), preprocessing=Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    )
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    return registry


def venv_tool(name: str) -> str | None:
    """A console script of the running interpreter's environment, else one on PATH."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() and os.access(candidate, os.X_OK) else shutil.which(name)
