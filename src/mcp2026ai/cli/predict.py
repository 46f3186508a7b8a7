"""``mcp predict``: one local inference through the runtime backend."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json
from mcp2026ai.cli.tensors_io import read_inputs
from mcp2026ai.errors import InvalidArgumentError, InvalidInputError
from mcp2026ai.imaging import decode_image, image_to_tensor, top_k
from mcp2026ai.registry import ModelVersion
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import DEFAULT_PLAN


def predict(
    name: Annotated[str, typer.Option(help="Model name.")],
    input: Annotated[Path | None, typer.Option("--input", help="Input tensors: .npy, .npz or .json.")] = None,
    image: Annotated[Path | None, typer.Option(help="An image, preprocessed as registered.")] = None,
    version: Annotated[str | None, typer.Option(help="Version; the default version if omitted.")] = None,
    k: Annotated[int, typer.Option("--top-k", help="For class scores, show the k best.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print outputs as JSON.")] = False,
) -> None:
    """Run one local inference and print the outputs."""
    registry = context.registry()
    record = registry.resolve(name, version)
    backend = create_backend(registry.artifact_path(record), record.signature, DEFAULT_PLAN)
    backend.load()
    outputs = backend.infer(_inputs(record, input, image))
    if as_json:
        print_json({name: {"shape": list(a.shape), "data": a.tolist()} for name, a in outputs.items()})
        return
    console.print(f"[bold]{record.ref}[/]")
    labels = record.preprocessing.labels if record.preprocessing else []
    for output_name, array in outputs.items():
        console.print(f"{output_name}: dtype={array.dtype} shape={list(array.shape)}")
        console.print(_preview(array, k, labels))


def _inputs(record: ModelVersion, input: Path | None, image: Path | None) -> dict[str, np.ndarray]:
    if (input is None) == (image is None):
        raise InvalidArgumentError("give exactly one of --input or --image")
    if input is not None:
        return read_inputs(input, record.signature)
    assert image is not None
    if record.preprocessing is None:
        raise InvalidArgumentError(f"{record.ref} has no preprocessing settings; register it with --preprocessing")
    if not image.is_file():
        raise InvalidArgumentError(f"{image}: no such image file")
    try:
        tensor = image_to_tensor(decode_image(image.read_bytes()), record.preprocessing)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{image}: {exc}") from None
    return {record.signature.inputs[0].name: tensor}


def _preview(array: np.ndarray, k: int, labels: list[str]) -> str:
    if k > 0 and array.ndim == 2:
        rows = []
        for index, row in enumerate(array):
            ranked = ", ".join(f"{c['label']}={c['score']:.4f}" for c in top_k(row, k, labels))
            rows.append(f"  row {index}: {ranked}")
        return "\n".join(rows)
    return np.array2string(array, threshold=20, precision=5)
