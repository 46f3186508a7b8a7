"""``mcp convert`` on silero-vad's TorchScript network, then ``mcp model register`` of the same file."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcp2026ai.cli import context
from mcp2026ai.cli.main import app
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.onnx_import import load_onnx

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.onnx's TorchScript exporter
runner = CliRunner()


@pytest.fixture
def vad_16k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("MCP_HOME", str(tmp_path / "home"))
    context.settings.cache_clear()
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("silero-vad is not installed (it is in the test extra)")
    jit = Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.jit"
    path = tmp_path / "vad16k.pt"
    torch.jit.save(torch.jit.load(str(jit), map_location="cpu")._model, str(path))
    yield path
    context.settings.cache_clear()


def test_convert_writes_a_validated_onnx_and_the_spec_sidecar(vad_16k: Path) -> None:
    args = ["convert", "--path", str(vad_16k), "--input-shape", "x:1,576", "--input-shape", "state:2,1,128"]
    result = runner.invoke(app, [*args, "--save-spec", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["onnx"] == str(vad_16k.with_suffix(".onnx"))
    assert [item["output"] for item in report["checks"]] == ["output_0", "output_1"]
    load_onnx(vad_16k.with_suffix(".onnx"))  # a valid ONNX file
    assert not any(path.name.startswith(".") for path in vad_16k.parent.iterdir())  # work folder removed
    registered = runner.invoke(app, ["model", "register", "--name", "vad", "--path", str(vad_16k), "--json"])
    assert registered.exit_code == 0, registered.output
    assert json.loads(registered.output)["format"] == "torchscript"


def test_convert_prints_the_signature_and_the_comparison(vad_16k: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "vad.onnx"
    out.parent.mkdir()
    args = ["convert", "--path", str(vad_16k), "--input-shape", "x:1,576", "--input-shape", "state:2,1,128"]
    result = runner.invoke(app, [*args, "--out", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert out.exists() and "torchscript -> onnx, outputs match" in result.output
    assert "original vs onnxruntime" in result.output


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("m.tflite", ["--input-shape", "x:1"], "--input-shape is for TorchScript"),
        ("m.bin", [], "expected a .tflite or TorchScript"),
    ],
)
def test_convert_usage_errors(tmp_path: Path, name: str, args: list[str], message: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"x")
    result = runner.invoke(app, ["convert", "--path", str(path), *args])
    assert isinstance(result.exception, InvalidArgumentError) and message in str(result.exception)
