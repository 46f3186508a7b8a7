"""``mcp model import-triton`` and ``mcp model export --format triton``: one line and exit 2 on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.triton_repository import read_config
from tests.support.cli import run_main
from tests.support.triton_repository import add_sub, add_sub_config, write_model


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    source = add_sub(tmp_path / "sources" / "simple.onnx")
    write_model(tmp_path / "repo", "simple", add_sub_config("simple"), {1: source, 2: source})
    return tmp_path / "repo"


def test_import_then_export(
    repository: Path,
    registry: ModelRegistry,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    imported = run_main(["model", "import-triton", str(repository)], capsys, monkeypatch)
    assert imported.code == 0 and imported.out.strip() == "imported simple: 2.0.0 (Triton 2)"
    exported = run_main(["model", "export", "--format", "triton", "--out", str(tmp_path / "out")], capsys, monkeypatch)
    assert exported.code == 0 and f"exported simple: {tmp_path / 'out' / 'simple'} (versions 20000099)" in exported.out
    assert read_config(tmp_path / "out" / "simple" / "config.pbtxt").max_batch_size == 8


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "max_batch_size: 8",
            "max_batch_size: 8\nmax_batch: 4",
            'config.pbtxt:4:1 : Message type "inference.ModelConfig" has no field named "max_batch"',
        ),
        ("dims: [ 16 ]", "dims: [ -5 ]", "config.pbtxt: input 'INPUT0': dims: -5 is impossible"),
        ("dims: [ 16 ]", "dims: [ 12 ]", "config.pbtxt: input 'INPUT0': dims: [12] do not match the model's [16]"),
    ],
)
def test_bad_config_is_one_line_and_changes_nothing(
    repository: Path,
    registry: ModelRegistry,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    old: str,
    new: str,
    message: str,
) -> None:
    config = repository / "simple" / "config.pbtxt"
    config.write_text(config.read_text().replace(old, new, 1))
    outcome = run_main(["model", "import-triton", str(repository)], capsys, monkeypatch)
    assert outcome.code == 2 and outcome.err.count("\n") == 1
    assert str(config) in outcome.err and message in outcome.err
    assert registry.model_names() == []


def test_serve_takes_a_repository_alone(
    repository: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = run_main(["serve", "--model-repository", str(repository), "--workers", "2"], capsys, monkeypatch)
    assert outcome.code == 2 and "--model-repository: serve it alone, in one process" in outcome.err
