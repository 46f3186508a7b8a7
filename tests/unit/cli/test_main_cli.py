"""The root app: version, bundled, and the entry point's error contract (exit 2, one line, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

import mcp2026ai
from mcp2026ai.bundled import bundled_model_path, bundled_names
from mcp2026ai.bundled_pipelines import bundled_pipeline_names
from mcp2026ai.errors import NotFoundError
from tests.support.cli import Invoke, ok, run_main


def test_version(cli: Invoke) -> None:
    assert ok(cli("version")).strip() == mcp2026ai.__version__


def test_bundled_lists_names(cli: Invoke) -> None:
    assert ok(cli("bundled")).split() == [*bundled_pipeline_names(), *bundled_names()]


def test_bundled_prints_a_path(cli: Invoke) -> None:
    assert Path(ok(cli("bundled", "ocr-cls")).strip()) == bundled_model_path("ocr-cls")


def test_bundled_unknown(cli: Invoke) -> None:
    assert isinstance(cli("bundled", "nope").exception, NotFoundError)


def test_no_arguments_shows_help(cli: Invoke) -> None:
    result = cli()
    assert "model" in result.output and "predict" in result.output


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["model", "register", "--name", "m", "--path", "{tmp}/absent.onnx"], "absent.onnx: no such file"),
        (["model", "register", "--name", "m", "--path", "{tmp}/corrupt.onnx"], "corrupt.onnx: not a valid ONNX model"),
        (
            ["model", "register", "--name", "bad name", "--path", "{tmp}/corrupt.onnx"],
            "model name 'bad name' is invalid",
        ),
        (["model", "show", "--name", "ghost"], "unknown model 'ghost'"),
        (["contract", "validate", "{tmp}/bad.yaml"], "bad.yaml: not valid YAML (line 2, column"),
        (["bundled", "nope"], "no bundled model 'nope'"),
    ],
)
def test_domain_errors_exit_2_with_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    text: str,
) -> None:
    (tmp_path / "corrupt.onnx").write_bytes(b"\x00garbage\xff" * 10)
    (tmp_path / "bad.yaml").write_text("sla_class: best-effort\nlatency: p99_ms: 5\n", encoding="utf-8")
    outcome = run_main([arg.format(tmp=tmp_path) for arg in args], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.out == ""
    lines = outcome.err.splitlines()
    assert len(lines) == 1, outcome.err
    assert lines[0].startswith("error: ")
    assert text in lines[0]
    assert "Traceback" not in outcome.err


def test_success_exits_0(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_main(["version"], capsys, monkeypatch)
    assert (outcome.code, outcome.out.strip(), outcome.err) == (0, mcp2026ai.__version__, "")
