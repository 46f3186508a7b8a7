"""Fixtures for the security tests: an isolated MCP_HOME, tiny real ONNX models, a throwaway PKI."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from mcp2026ai.cli import context
from mcp2026ai.cli.main import main
from mcp2026ai.registry import ModelRegistry
from tests.support.pki import PKI, make_pki

__all__ = ["PKI"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """MCP_HOME in tmp_path; the CLI's cached settings are reset around the test."""
    root = tmp_path / "home"
    monkeypatch.setenv("MCP_HOME", str(root))
    for name in ("MCP_AUDIT_LOG", "MCP_TRUSTED_KEYS", "MCP_KEY_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)
    context.settings.cache_clear()
    yield root
    context.settings.cache_clear()


@pytest.fixture
def registry(home: Path) -> ModelRegistry:
    return ModelRegistry(home)


def write_onnx(path: Path, op: str = "Relu", width: int = 4) -> Path:
    """A one-node float model x[-1, width] -> y (real, loadable by onnxruntime)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], f"tiny_{op.lower()}", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture
def relu_model(tmp_path: Path) -> Path:
    return write_onnx(tmp_path / "relu.onnx", "Relu")


@pytest.fixture
def sigmoid_model(tmp_path: Path) -> Path:
    return write_onnx(tmp_path / "sigmoid.onnx", "Sigmoid")


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    """A CA, a server cert for localhost/127.0.0.1, a client cert, and an expired server cert."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run ``mcp ARGS`` in-process through the console-script entry point (domain errors -> exit 2)."""
    monkeypatch.setenv("COLUMNS", "250")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["mcp", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
