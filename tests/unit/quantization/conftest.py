"""Fixtures: an isolated registry home, PaddleOCR's classifier registered, rendered text data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.cli import context
from mcp2026ai.registry import ModelRegistry, ModelVersion
from tests.unit.quantization.support import OCR_PREP, text_lines


@pytest.fixture(scope="session")
def ocr_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """calib.npz (16 lines) and val.npz (24 other lines) for the classifier's input ``x``."""
    folder = tmp_path_factory.mktemp("ocr-data")
    np.savez(folder / "calib.npz", x=text_lines(16, seed=1))
    np.savez(folder / "val.npz", x=text_lines(24, seed=2))
    return {"calib": folder / "calib.npz", "val": folder / "val.npz"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated MCP_HOME; the CLI's cached settings are reset around the test."""
    path = tmp_path / "mcp-home"
    monkeypatch.setenv("MCP_HOME", str(path))
    context.settings.cache_clear()
    yield path
    context.settings.cache_clear()


@pytest.fixture
def registry(home: Path) -> ModelRegistry:
    return ModelRegistry(home)


@pytest.fixture
def ocr_cls(registry: ModelRegistry) -> ModelVersion:
    return registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=OCR_PREP)
