"""Fixtures for policy tests: a tiny generated model and a registry under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.registry import ModelRegistry

from .support import write_mlp


@pytest.fixture()
def mlp_path(tmp_path: Path) -> Path:
    return write_mlp(tmp_path / "mlp.onnx")


@pytest.fixture()
def registry(tmp_path: Path) -> ModelRegistry:
    return ModelRegistry(tmp_path / "home")
