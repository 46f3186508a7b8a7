"""The installed ``mcp`` console script as a user runs it: exit codes, stdout, one-line stderr."""

from __future__ import annotations

import json
from pathlib import Path

from mcp2026ai.bundled import bundled_model_path
from tests.support.cli import CONTRACT, PREPROCESSING, run_console_script
from tests.support.images import render_text


def test_domain_error_is_exit_2_and_one_line_without_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "absent.onnx"
    proc = run_console_script(["model", "register", "--name", "m", "--path", str(missing)], cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [f"error: {missing}: no such file"]
    assert "Traceback" not in proc.stderr


def test_bad_contract_is_exit_2_naming_file_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "contract.yaml"
    bad.write_text("latency:\n  p99_ms: -5\n", encoding="utf-8")
    proc = run_console_script(["contract", "validate", str(bad)], cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"error: {bad}: latency.p99_ms: ") and line.endswith("(got -5)")
    assert "Traceback" not in proc.stderr


def test_register_then_predict_an_image(tmp_path: Path, mcp_home: Path) -> None:
    model = bundled_model_path("ocr-cls")
    register = run_console_script(
        ["model", "register", "--name", "ocr-cls", "--path", str(model), "--contract", str(CONTRACT),
         "--preprocessing", str(PREPROCESSING), "--stage", "production", "--json"],
        cwd=tmp_path,
    )  # fmt: skip
    assert register.returncode == 0, register.stderr
    assert json.loads(register.stdout)["version"] == "1.0.0"
    assert (mcp_home / "registry.db").exists(), "MCP_HOME from the environment is honoured"
    render_text(rotate=True).save(tmp_path / "upside-down.png")
    predict = run_console_script(
        ["predict", "--name", "ocr-cls", "--image", str(tmp_path / "upside-down.png"), "--top-k", "2"], cwd=tmp_path
    )
    assert predict.returncode == 0, predict.stderr
    assert "row 0: 180=1.0000, 0=0.0000" in predict.stdout
