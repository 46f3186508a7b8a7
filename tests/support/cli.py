"""Run the ``mcp`` CLI in-process through its real entry point, or as the installed console script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import Result

from mcp2026ai.cli.main import main
from tests.support import REPO_ROOT

CONTRACT = REPO_ROOT / "examples" / "contracts" / "ocr-cls.yaml"
PREPROCESSING = REPO_ROOT / "examples" / "ocr-cls.preprocess.yaml"

Invoke = Callable[..., Result]


def ok(result: Result) -> str:
    """The stdout of a CliRunner invocation that must have succeeded."""
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.output}\n{result.exception!r}"
    return result.stdout


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def run_main(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """``mcp ARGS`` through ``main()``: the same error handling as the console script, no subprocess."""
    monkeypatch.setattr(sys, "argv", ["mcp", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main()
    captured = capsys.readouterr()
    code = info.value.code
    return Outcome(code if isinstance(code, int) else (0 if code is None else 1), captured.out, captured.err)


def mcp_executable() -> str:
    """The ``mcp`` console script of the interpreter running the tests."""
    beside = Path(sys.executable).parent / "mcp"
    found = str(beside) if beside.exists() else shutil.which("mcp")
    assert found, "the mcp console script is not installed (pip install -e .)"
    return found


def run_console_script(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real ``mcp`` console script, importing this checkout's sources."""
    environment = {**os.environ, **(env or {})}
    src = str(REPO_ROOT / "src")
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [src, environment.get("PYTHONPATH", "")]))
    environment["COLUMNS"] = "200"
    return subprocess.run(
        [mcp_executable(), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120, check=False
    )
