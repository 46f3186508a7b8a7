"""Register one model in a fresh MCP_HOME and start `mcp serve` for it (the single-server benchmarks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MCP = [sys.executable, "-m", "mcp2026ai.cli"]


def serve_model(
    home: Path, name: str, model: Path, serve_args: list[str], register_args: list[str] | None = None
) -> subprocess.Popen[str]:
    """``mcp model register`` then ``mcp serve --name NAME SERVE_ARGS``; returns once it is listening."""
    env = {**os.environ, "MCP_HOME": str(home)}
    register = [*MCP, "model", "register", "--name", name, "--path", str(model), *(register_args or [])]
    subprocess.run(register, env=env, check=True, capture_output=True)
    server = subprocess.Popen([*MCP, "serve", "--name", name, *serve_args], env=env, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith("listening"):
            return server
    raise RuntimeError("mcp serve did not start")
