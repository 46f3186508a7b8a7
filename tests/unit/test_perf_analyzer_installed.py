"""perf_analyzer (Triton's load generator) is installed in the venv by scripts/install-perf-analyzer.sh."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

WRAPPER = Path(sysconfig.get_path("scripts")) / "perf_analyzer"
HINT = f"run: bash scripts/install-perf-analyzer.sh {Path(sysconfig.get_path('data'))} (make test does)"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(WRAPPER), *args], capture_output=True, text=True, timeout=60, check=False)


def test_wrapper_is_installed() -> None:
    assert WRAPPER.is_file() and os.access(WRAPPER, os.X_OK), f"{WRAPPER} is missing; {HINT}"


def test_version_runs() -> None:
    proc = run("--version")
    assert proc.returncode == 0, proc.stderr
    assert "Perf Analyzer Version" in proc.stdout + proc.stderr


def test_usage_lists_the_load_options() -> None:
    proc = run()
    usage = proc.stdout + proc.stderr
    assert "Usage:" in usage
    for option in (
        "--concurrency-range",
        "--request-rate-range",
        "--measurement-interval",
        "-u <URL for inference service>",
    ):
        assert option in usage, option
