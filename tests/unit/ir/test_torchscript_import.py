"""TorchScript -> ONNX on silero-vad's real TorchScript model and on small scripted modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir import import_model, supported_suffixes
from mcp2026ai.ir.conversion import run_onnx
from mcp2026ai.ir.example_inputs import EMBEDDED_SPEC_NAME, InputSpecs, parse_input_spec, sidecar_path, specs_document
from mcp2026ai.ir.torchscript_import import convert_torchscript
from mcp2026ai.registry import ModelRegistry

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.script is deprecated in 2.13

VAD_SPECS = InputSpecs(inputs=[parse_input_spec("x:1,576"), parse_input_spec("state:2,1,128")])


def _silero_jit() -> Path:
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("silero-vad is not installed (it is in the test extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.jit"


@pytest.fixture(scope="module")
def vad_16k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """silero-vad's 16 kHz network (forward(x, state) -> (speech prob, state)) saved as its own .pt."""
    module = torch.jit.load(str(_silero_jit()), map_location="cpu")
    path = tmp_path_factory.mktemp("vad") / "vad16k.pt"
    torch.jit.save(module._model, str(path))
    return path


class TinyNet(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return torch.softmax(self.head(pooled), dim=1)


class Histogram(torch.nn.Module):  # type: ignore[misc]
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.histc(x, bins=4)


def _save(module: torch.nn.Module, path: Path, spec_document: str | None = None) -> Path:
    extra = {EMBEDDED_SPEC_NAME: spec_document} if spec_document else {}
    torch.jit.save(torch.jit.script(module), str(path), _extra_files=extra)
    return path


def test_torchscript_suffixes_are_registered() -> None:
    assert {".pt", ".jit", ".torchscript"} <= set(supported_suffixes())


def test_silero_vad_exports_and_matches_torchscript(vad_16k: Path, tmp_path: Path) -> None:
    conversion = convert_torchscript(vad_16k, tmp_path, VAD_SPECS)
    signature = conversion.imported.signature
    assert conversion.imported.source_format == "torchscript"
    assert [(s.name, s.shape) for s in signature.inputs] == [("x", [1, 576]), ("state", [2, 1, 128])]
    assert [s.name for s in signature.outputs] == ["output_0", "output_1"]
    assert all(check.passed and check.max_abs < 1e-4 for check in conversion.checks)
    # a different input than the validation one: still the same speech probability
    module = torch.jit.load(str(vad_16k))
    audio = np.sin(np.linspace(0, 200, 576, dtype=np.float32))[np.newaxis] * 0.3
    state = np.zeros((2, 1, 128), np.float32)
    expected, _ = module(torch.from_numpy(audio), torch.from_numpy(state))
    got = run_onnx(conversion.imported.onnx_path, {"x": audio, "state": state})["output_0"]
    np.testing.assert_allclose(got, expected.detach().numpy(), atol=1e-5)


def test_the_registry_imports_a_pt_file_with_its_embedded_specs(tmp_path: Path) -> None:
    document = specs_document([parse_input_spec("x:2,3,8,8")], dynamic_batch=True)
    path = _save(TinyNet(), tmp_path / "tiny.pt", document)
    record = ModelRegistry(tmp_path / "home").register("tiny", path)
    assert record.format == "torchscript"
    assert record.signature.inputs[0].shape == [-1, 3, 8, 8] and record.signature.batchable


def test_a_sidecar_file_gives_the_specs(tmp_path: Path) -> None:
    path = _save(TinyNet(), tmp_path / "tiny.pt")
    sidecar_path(path).write_text(specs_document([parse_input_spec("x:1,3,8,8")], dynamic_batch=False))
    imported = import_model(path, tmp_path / "work")
    assert imported.signature.inputs[0].shape == [1, 3, 8, 8]
    assert imported.onnx_path.parent == tmp_path / "work"


def test_dynamic_batch_is_checked_at_a_second_batch_size(tmp_path: Path) -> None:
    specs = InputSpecs(inputs=[parse_input_spec("x:2,3,8,8")], dynamic_batch=True)
    conversion = convert_torchscript(_save(TinyNet(), tmp_path / "tiny.pt"), tmp_path, specs)
    assert len(conversion.checks) == 2  # batch 2, then batch 3
    x = np.random.default_rng(1).standard_normal((5, 3, 8, 8)).astype(np.float32)
    assert run_onnx(conversion.imported.onnx_path, {"x": x})["output"].shape == (5, 2)


def test_without_specs_the_error_says_how_to_give_them(tmp_path: Path) -> None:
    path = _save(TinyNet(), tmp_path / "tiny.pt")
    with pytest.raises(ModelImportError, match=r"needs example input shapes.*--input-shape.*tiny.pt.inputs.json"):
        import_model(path, tmp_path / "work")


def test_an_unsupported_operator_is_named(tmp_path: Path) -> None:
    path = _save(Histogram(), tmp_path / "hist.pt")
    specs = InputSpecs(inputs=[parse_input_spec("x:16")])
    with pytest.raises(ModelImportError, match=r"hist.pt: unsupported operator aten::histc"):
        convert_torchscript(path, tmp_path, specs)


def test_the_full_silero_model_fails_with_a_one_line_reason(tmp_path: Path) -> None:
    # Its forward takes (audio, int sample_rate): example tensors cannot drive it.
    specs = InputSpecs(inputs=[parse_input_spec("x:1,512")])
    with pytest.raises(
        ModelImportError, match=r"the module failed on the example inputs .*missing value for argument 'sr'"
    ):
        convert_torchscript(_silero_jit(), tmp_path, specs)


def test_wrong_example_shapes_and_non_torchscript_files_are_rejected(tmp_path: Path) -> None:
    tiny = _save(TinyNet(), tmp_path / "tiny.pt")
    with pytest.raises(ModelImportError, match="failed on the example inputs"):
        convert_torchscript(tiny, tmp_path, InputSpecs(inputs=[parse_input_spec("x:1,5")]))
    state_dict = tmp_path / "weights.pt"
    torch.save(TinyNet().state_dict(), str(state_dict))
    with pytest.raises(ModelImportError, match=r"weights\.pt: not a TorchScript archive"):
        convert_torchscript(state_dict, tmp_path, InputSpecs(inputs=[parse_input_spec("x:1,3,8,8")]))


def test_without_torch_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "any.pt"
    path.write_bytes(b"whatever")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ModelImportError, match=r"pip install 'mcp2026ai\[torch\]'"):
        import_model(path, tmp_path)
