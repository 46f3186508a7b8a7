"""`mcp model register --plan`: a contract no plan can meet refuses the version with a clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp2026ai.bundled import bundled_model_path

pytestmark = pytest.mark.timeout(180)


def mcp(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp2026ai.cli", *args], env=env, capture_output=True, text=True)


def test_register_with_plan(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    impossible = tmp_path / "impossible.yaml"
    impossible.write_text("latency:\n  p99_ms: 0.001\n")
    model = str(bundled_model_path("ocr-cls"))
    refused = mcp(env, "model", "register", "--name", "cls", "--path", model, "--contract", str(impossible), "--plan")
    assert refused.returncode == 2
    assert "no plan meets the contract of cls:1.0.0" in refused.stderr
    assert "misses latency.p99_ms by" in refused.stderr and "Traceback" not in refused.stderr
    assert mcp(env, "model", "list", "--json").stdout.strip() == "[]"
    feasible = tmp_path / "ok.yaml"
    feasible.write_text("latency:\n  p99_ms: 2000\n")
    accepted = mcp(env, "model", "register", "--name", "cls", "--path", model, "--contract", str(feasible), "--plan")
    assert accepted.returncode == 0, accepted.stderr
    assert "plan: " in accepted.stdout
    trace = mcp(env, "policy", "trace", "--model", "cls", "--last", "1h", "--json")
    assert '"trigger": "register"' in trace.stdout
