"""``mcp quantize`` and ``mcp verify`` through the real command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcp2026ai.cli.main import app, main
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.security import AuditLog

runner = CliRunner()


def _mcp(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_quantize_then_verify_passes_and_stores_the_result(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]
) -> None:
    code, output = _mcp("quantize", "--name", "ocr-cls", "--scheme", "fp16")
    assert code == 0, output
    assert "registered ocr-cls:1.1.0 (fp16 from ocr-cls:1.0.0" in output.replace("\n", " ")
    [entry] = [e for e in AuditLog(registry.home / "audit.jsonl").entries() if e["action"] == "model.register"]
    assert entry["target"] == "ocr-cls:1.1.0" and entry["details"]["parent"] == "ocr-cls:1.0.0"
    assert entry["actor"].startswith("cli:")
    code, output = _mcp("verify", "--name", "ocr-cls", "--version", "1.1.0", "--data", str(ocr_data["val"]), "--json")
    assert code == 0, output
    result = json.loads(output)
    assert result["passed"] and result["baseline"] == "1.0.0" and result["tolerance"] == 0.03
    assert registry.catalog.annotations("ocr-cls", "verification", "1.1.0")


def test_verify_exits_1_past_the_tolerance(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]
) -> None:
    assert _mcp("quantize", "--name", "ocr-cls", "--scheme", "fp16", "--json")[0] == 0
    args = ["verify", "--name", "ocr-cls", "--version", "1.1.0", "--baseline", "1.0.0"]
    code, output = _mcp(*args, "--data", str(ocr_data["val"]), "--tolerance", "0.00001")
    assert code == 1
    assert "FAILED: relative L2 drift" in output and "top-1 agreement 1.0000" in output


def test_int8_static_from_the_command_line(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]
) -> None:
    args = ["quantize", "--name", "ocr-cls", "--scheme", "int8-static", "--per-channel", "--json"]
    code, output = _mcp(*args, "--calib-data", str(ocr_data["calib"]), "--calibrate-method", "percentile")
    assert code == 0, output
    record = json.loads(output)
    assert record["tags"]["quantized"] == "int8-static" and record["tags"]["per_channel"] == "true"
    assert record["parent"] == "ocr-cls:1.0.0"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["quantize", "--name", "ocr-cls", "--scheme", "int8-static"], "needs calibration data"),
        (["quantize", "--name", "nope", "--scheme", "fp16"], "unknown model 'nope'"),
        (["verify", "--name", "ocr-cls", "--version", "1.0.0", "--data", "missing.npz"], "no parent version"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    ocr_cls: ModelVersion,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.setattr(sys, "argv", ["mcp", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
