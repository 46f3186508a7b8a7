from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


def mcp_command() -> list[str]:
    return [sys.executable, "-m", "mcp2026ai.cli"]


def listening_line(process: subprocess.Popen[str]) -> str:
    """Skip the plan lines `mcp serve` prints and return its `listening ...` line."""
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if line.startswith("listening"):
            return line
    return "".join(seen)


@contextmanager
def mcp_serve_workers(home: Path, model: Path, workers: int) -> Iterator[tuple[str, str]]:
    """`mcp serve --model-path model --workers N` on ephemeral ports: yields (http, grpc) host:port;
    on leaving, SIGTERM must end every worker cleanly (exit 0, no traceback)."""
    process = subprocess.Popen(
        [
            *mcp_command(),
            "serve",
            "--model-path",
            str(model),
            "--port",
            "0",
            "--grpc-port",
            "0",
            "--workers",
            str(workers),
        ],
        env={**os.environ, "MCP_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = listening_line(process)
        match = re.search(rf"http=(\d+) grpc=(\d+) models={re.escape(model.stem)}:1\.0\.0 workers={workers}", line)
        assert match, line
        yield f"127.0.0.1:{match.group(1)}", f"127.0.0.1:{match.group(2)}"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert "Traceback" not in err
