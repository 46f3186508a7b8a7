"""Shared fixtures: an isolated MCP_HOME per test and small synthetic ONNX models built in tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytest-xdist's workers start with COLUMNS=80 in their environment, and a rich Console created while
# COLUMNS is set keeps that width for good: the CLI's consoles would then ignore the COLUMNS the CLI
# tests set around each call, and wrap long paths at 80 columns where a one-process run does not.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

from mcp2026ai.cli import context
from mcp2026ai.registry import ModelRegistry
from tests.support.llm import (  # noqa: F401 (fixtures)
    llm_cache,
    one_core,
    smollm2_fp32,
    smollm2_gguf,
    smollm2_hf,
    smollm2_int4,
    smollm2_int8,
)
from tests.support.onnx_models import build_int64, build_mlp, build_two_input
from tests.support.stores import backend, postgres_server, s3_server, shared_stores  # noqa: F401 (fixtures)

pytest_plugins = ["tests.support.xdist_policy"]
"""Workers: loadfile scheduling, and a dead worker fails the run (see the module)."""


@pytest.fixture(autouse=True)
def mcp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own registry home; the CLI's cached settings are reset around it."""
    home = tmp_path / "mcp-home"
    monkeypatch.setenv("MCP_HOME", str(home))
    context.settings.cache_clear()
    yield home
    context.settings.cache_clear()


@pytest.fixture
def mlp_path(tmp_path: Path) -> Path:
    return build_mlp(tmp_path / "mlp.onnx")


@pytest.fixture
def other_mlp_path(tmp_path: Path) -> Path:
    """Same architecture, different weights: a different artifact digest."""
    return build_mlp(tmp_path / "mlp-other.onnx", seed=10)


@pytest.fixture
def two_input_path(tmp_path: Path) -> Path:
    return build_two_input(tmp_path / "two_input.onnx")


@pytest.fixture
def int64_path(tmp_path: Path) -> Path:
    return build_int64(tmp_path / "int64.onnx")


@pytest.fixture
def registry(mcp_home: Path) -> ModelRegistry:
    return ModelRegistry(mcp_home)
