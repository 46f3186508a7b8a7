"""TorchScript (.pt) import: load the ScriptModule, export it to ONNX, prove both compute the same.

``torch.onnx.export`` needs example inputs, which a TorchScript file does not declare: they come
from :class:`~mcp2026ai.ir.example_inputs.InputSpec` objects given by the caller (``mcp convert
--input-shape``), embedded in the file, or in a sidecar (see :mod:`mcp2026ai.ir.example_inputs`).
The export uses the TorchScript-based exporter (``dynamo=False``): the dynamo exporter does not
take ScriptModules. torch is an optional extra (``pip install 'mcp2026ai[torch]'``).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.errors import ModelImportError
from mcp2026ai.extras import require
from mcp2026ai.ir.conversion import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    Conversion,
    OutputCheck,
    compare_all,
    converted_path,
    ensure_equivalent,
    first_line,
    quiet_stdout,
    run_onnx,
)
from mcp2026ai.ir.example_inputs import (
    EMBEDDED_SPEC_NAME,
    InputSpec,
    InputSpecs,
    parse_specs_document,
    sidecar_path,
)
from mcp2026ai.ir.importer import ImportedModel, register_importer
from mcp2026ai.ir.onnx_import import load_onnx, onnx_signature

SUFFIXES = (".pt", ".jit", ".torchscript")
OPSET = 17
_UNSUPPORTED_OP = re.compile(r"operator '([\w:.]+)'")


def import_torchscript(path: Path, workdir: Path) -> ImportedModel:
    """The registry's importer: input specs come from the file itself or its sidecar."""
    return convert_torchscript(path, workdir).imported


def convert_torchscript(
    path: Path,
    workdir: Path,
    specs: InputSpecs | None = None,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
) -> Conversion:
    """Export ``path`` to ONNX under ``workdir`` and validate it against TorchScript on seeded inputs."""
    torch = require("torch", "TorchScript import", ModelImportError)
    embedded: dict[str, Any] = {EMBEDDED_SPEC_NAME: ""}
    module = _load(torch, path, embedded)
    specs = specs or _stored_specs(path, embedded[EMBEDDED_SPEC_NAME])
    examples = _examples(specs.inputs, batch=None)
    reference = _run_torch(torch, module, examples, path)
    target = converted_path(path, workdir)
    names = [spec.name for spec in specs.inputs]
    output_names = ["output"] if len(reference) == 1 else [f"output_{i}" for i in range(len(reference))]
    _export(torch, module, examples, target, names, output_names, specs.dynamic_batch, path)
    expected = dict(zip(output_names, reference, strict=True))
    checks = _validate(target, expected, dict(zip(names, examples, strict=True)), rtol, atol, path)
    if specs.dynamic_batch:
        larger = _examples(specs.inputs, batch=specs.inputs[0].shape[0] + 1)
        expected = dict(zip(output_names, _run_torch(torch, module, larger, path), strict=True))
        checks += _validate(target, expected, dict(zip(names, larger, strict=True)), rtol, atol, path)
    model = load_onnx(target)
    imported = ImportedModel(onnx_path=target, source_format="torchscript", signature=onnx_signature(model, target))
    return Conversion(imported=imported, checks=checks)


def _load(torch: Any, path: Path, embedded: dict[str, Any]) -> Any:
    try:
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=embedded)
    except (RuntimeError, ValueError, OSError) as exc:
        raise ModelImportError(f"{path}: not a TorchScript archive ({first_line(exc)})") from None
    module.eval()
    for key, value in embedded.items():
        embedded[key] = value.decode("utf-8") if isinstance(value, bytes) else value
    return module


def _stored_specs(path: Path, embedded: str) -> InputSpecs:
    if embedded:
        return parse_specs_document(embedded, f"{path}:{EMBEDDED_SPEC_NAME}")
    sidecar = sidecar_path(path)
    if sidecar.exists():
        return parse_specs_document(sidecar.read_text(encoding="utf-8"), str(sidecar))
    raise ModelImportError(
        f"{path}: TorchScript export needs example input shapes; give them with "
        f"`mcp convert --path {path.name} --input-shape NAME:D1,D2,...`, or save them in {sidecar.name}"
    )


def _examples(specs: list[InputSpec], batch: int | None) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [spec.example(rng, batch) for spec in specs]


def _run_torch(torch: Any, module: Any, examples: list[np.ndarray], path: Path) -> list[np.ndarray]:
    try:
        with torch.no_grad():
            result = module(*[torch.from_numpy(array) for array in examples])
    except Exception as exc:  # a ScriptModule raises torch.jit.Error, RuntimeError, ValueError...  # noqa: BLE001
        raise ModelImportError(f"{path}: the module failed on the example inputs ({first_line(exc)})") from None
    flat = list(result) if isinstance(result, tuple | list) else [result]
    if not all(isinstance(item, torch.Tensor) for item in flat):
        raise ModelImportError(f"{path}: only tensor outputs (or tuples of tensors) can be exported to ONNX")
    return [item.detach().cpu().numpy() for item in flat]


def _export(
    torch: Any,
    module: Any,
    examples: list[np.ndarray],
    target: Path,
    input_names: list[str],
    output_names: list[str],
    dynamic_batch: bool,
    path: Path,
) -> None:
    axes = {name: {0: "batch"} for name in [*input_names, *output_names]} if dynamic_batch else None
    try:
        with warnings.catch_warnings(), quiet_stdout():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                tuple(torch.from_numpy(array) for array in examples),
                str(target),
                dynamo=False,
                input_names=input_names,
                output_names=output_names,
                dynamic_axes=axes,
                opset_version=OPSET,
            )
    except torch.onnx.errors.UnsupportedOperatorError as exc:
        match = _UNSUPPORTED_OP.search(str(exc))
        operator = match.group(1) if match else first_line(exc)
        raise ModelImportError(
            f"{path}: unsupported operator {operator}: torch.onnx.export has no ONNX opset {OPSET} conversion for it"
        ) from None
    except Exception as exc:  # torch.onnx raises SymbolicValueError, OnnxExporterError, RuntimeError...  # noqa: BLE001
        detail = first_line(exc).split(" [Caused by")[0]
        raise ModelImportError(f"{path}: TorchScript -> ONNX export failed: {detail}") from None


def _validate(
    target: Path,
    expected: dict[str, np.ndarray],
    feeds: dict[str, np.ndarray],
    rtol: float,
    atol: float,
    path: Path,
) -> tuple[OutputCheck, ...]:
    outputs = run_onnx(target, feeds)
    checks = compare_all(expected, outputs, rtol, atol)
    ensure_equivalent(path, checks, rtol, atol)
    return checks


for _suffix in SUFFIXES:
    register_importer(_suffix, import_torchscript)
