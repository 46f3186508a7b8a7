"""The default plan holds a model's weights once: the resident memory of a real ``mcp serve`` (VmRSS)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.cpu_affinity import usable_physical_cores
from support.models import mlp_model, slow_matmul_model

from .conftest import listening_line, mcp_command

pytestmark = pytest.mark.slow

WEIGHTS_MIB = 128
"""Eight 2048 x 2048 float32 weights: large beside the ~150 MiB the process takes for itself."""
ONCE = 2.0
"""Growth below this x the weights: one session (onnxruntime also keeps a prepacked copy of what its
MatMul kernels pack, about 0.6 x the weights on its own: 202 MiB for these 128, measured alone)."""


def served_rss_mib(home: Path, name: str, *flags: str) -> float:
    """VmRSS of ``mcp serve --name NAME`` once it listens (and a second has passed), in MiB."""
    command = [*mcp_command(), "serve", "--name", name, "--no-policy", "--port", "0", "--grpc-port", "off", *flags]
    process = subprocess.Popen(
        command,
        env={**os.environ, "MCP_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = listening_line(process)
        assert line.startswith("listening"), line
        time.sleep(1.0)
        status = Path(f"/proc/{process.pid}/status").read_text()
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        assert match, status
        return int(match.group(1)) / 1024
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=90)
        assert process.returncode == 0, err


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc (Linux)")
def test_the_default_plan_holds_the_weights_once_and_the_lone_session_plan_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    registry = ModelRegistry(home)
    big = slow_matmul_model(tmp_path / "big.onnx", size=2048, depth=8)
    assert abs(big.stat().st_size / (1 << 20) - WEIGHTS_MIB) < 1
    registry.register("big", big)
    registry.register("tiny", mlp_model(tmp_path / "tiny.onnx"))

    baseline = served_rss_mib(home, "tiny")
    once = served_rss_mib(home, "big") - baseline
    assert once < ONCE * WEIGHTS_MIB, f"default plan: {once:.0f} MiB for {WEIGHTS_MIB} MiB of weights"

    if usable_physical_cores() < 2:
        return  # one core: the lone-session plan is the default plan there
    twice = served_rss_mib(home, "big", "--lone-session-plan") - baseline
    assert twice - once > 0.75 * WEIGHTS_MIB, f"lone-session plan {twice:.0f} MiB, default {once:.0f}: a second copy"
