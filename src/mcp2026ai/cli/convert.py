"""``mcp convert``: turn a TorchScript or TFLite file into a validated ONNX file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.conversion import Conversion
from mcp2026ai.ir.example_inputs import InputSpecs, parse_input_spec, sidecar_path, specs_document
from mcp2026ai.ir.tflite_import import convert_tflite
from mcp2026ai.ir.torchscript_import import SUFFIXES as TORCHSCRIPT_SUFFIXES
from mcp2026ai.ir.torchscript_import import convert_torchscript


def convert(
    path: Annotated[Path, typer.Option(help="Model file: TorchScript (.pt, .jit) or TFLite (.tflite).")],
    input_shape: Annotated[
        list[str] | None,
        typer.Option(help="TorchScript example input NAME:D1,D2,...[:DATATYPE], in forward() order; repeatable."),
    ] = None,
    dynamic_batch: Annotated[bool, typer.Option(help="TorchScript: export dimension 0 as a dynamic batch.")] = False,
    out: Annotated[Path | None, typer.Option(help="ONNX file to write; <path>.onnx if omitted.")] = None,
    save_spec: Annotated[
        bool, typer.Option(help="Also write <path>.inputs.json so `mcp model register --path` can import it.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Convert to ONNX and check it against the original runtime on the same inputs."""
    if not path.is_file():
        raise InvalidArgumentError(f"{path}: no such file")
    target = out or path.with_suffix(".onnx")
    workdir = target.parent / f".{target.name}.work"
    try:
        conversion = _convert(path, workdir, input_shape or [], dynamic_batch, save_spec)
        shutil.move(conversion.imported.onnx_path, target)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _report(target, conversion, as_json)


def _convert(path: Path, workdir: Path, shapes: list[str], dynamic_batch: bool, save_spec: bool) -> Conversion:
    suffix = path.suffix.lower()
    if suffix == ".tflite":
        if shapes:
            raise InvalidArgumentError(f"{path}: --input-shape is for TorchScript; a TFLite file declares its inputs")
        return convert_tflite(path, workdir)
    if suffix not in TORCHSCRIPT_SUFFIXES:
        raise InvalidArgumentError(
            f"{path}: expected a .tflite or TorchScript ({', '.join(TORCHSCRIPT_SUFFIXES)}) file"
        )
    specs = (
        InputSpecs(inputs=[parse_input_spec(text) for text in shapes], dynamic_batch=dynamic_batch) if shapes else None
    )
    conversion = convert_torchscript(path, workdir, specs)
    if save_spec and specs is not None:
        sidecar_path(path).write_text(specs_document(specs.inputs, dynamic_batch) + "\n", encoding="utf-8")
    return conversion


def _report(target: Path, conversion: Conversion, as_json: bool) -> None:
    checks = [
        {"output": check.name, "max_abs_diff": f"{check.max_abs:.3g}", "rel_l2": f"{check.rel_l2:.3g}"}
        for check in conversion.checks
    ]
    signature = conversion.imported.signature
    if as_json:
        print_json({"onnx": str(target), "signature": signature.model_dump(), "checks": checks})
        return
    console.print(f"wrote [bold]{target}[/] ({conversion.imported.source_format} -> onnx, outputs match)")
    rows = [
        {"role": role, "name": spec.name, "datatype": spec.datatype, "shape": spec.shape}
        for role, specs in (("input", signature.inputs), ("output", signature.outputs))
        for spec in specs
    ]
    print_table("signature", rows, ["role", "name", "datatype", "shape"])
    print_table("original vs onnxruntime", checks, ["output", "max_abs_diff", "rel_l2"])
