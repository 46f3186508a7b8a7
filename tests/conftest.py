"""Shared fixtures: an isolated MCP_HOME per test and small synthetic ONNX models built in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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

# Modules that must not run beside each other on two pytest-xdist workers: the Ray tests find their
# replicas by process name and start Ray clusters of their own.
MACHINE_WIDE_GROUPS = {
    "tests.integration.test_ray_serve": "ray",
    "tests.integration.test_ray_multinode": "ray",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make test` runs on two pytest-xdist workers with `--dist loadgroup`: each module's tests stay
    together on one worker (their module-scoped servers start once), and the modules of a
    machine-wide group share a worker so that they never run at the same time."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = item.module.__name__ if item.module is not None else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(MACHINE_WIDE_GROUPS.get(module, module)))


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
