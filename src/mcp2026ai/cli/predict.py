"""``mcp predict``: one local inference through the runtime backend (a pipeline: through its steps,
served in this process as a server serves them)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json
from mcp2026ai.cli.tensors_io import is_named_input, read_inputs, read_named_inputs
from mcp2026ai.dataplane.pipeline_local import run_pipeline
from mcp2026ai.errors import InvalidArgumentError, InvalidInputError
from mcp2026ai.imaging import decode_image, image_to_tensor, top_k
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.pipelines import is_pipeline
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import DEFAULT_PLAN

PIPELINE_PREVIEW_ELEMENTS = 1000
"""A pipeline's outputs (lines, boxes, scores) are printed whole up to this many elements."""


def predict(
    name: Annotated[str, typer.Option("--name", "--model", help="Model (or pipeline) name.")],
    input: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            help="Input tensors: one .npy, .npz or .json file; or NAME=FILE (NAME=@FILE) per input, a BYTES "
            "input taking the file's bytes (--input image=@page.png), others a .npy; repeatable.",
        ),
    ] = None,
    image: Annotated[
        Path | None,
        typer.Option(help="An image, preprocessed as registered (a model taking one BYTES input: its bytes)."),
    ] = None,
    version: Annotated[str | None, typer.Option(help="Version; the default version if omitted.")] = None,
    k: Annotated[int, typer.Option("--top-k", help="For class scores, show the k best.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print outputs as JSON.")] = False,
) -> None:
    """Run one local inference and print the outputs (a pipeline's too: text lines, boxes, scores)."""
    registry = context.registry()
    record = registry.resolve(name, version)
    inputs = _inputs(record, input or [], image)
    outputs = (
        _run_pipeline(registry, record, inputs, input or [], image)
        if is_pipeline(record)
        else _run(registry, record, inputs)
    )
    if as_json:
        print_json({name: {"shape": list(a.shape), "data": _json_data(a)} for name, a in outputs.items()})
        return
    console.print(f"[bold]{record.ref}[/]")
    labels = record.preprocessing.labels if record.preprocessing else []
    threshold = PIPELINE_PREVIEW_ELEMENTS if is_pipeline(record) else 20
    for output_name, array in outputs.items():
        console.print(f"{output_name}: dtype={array.dtype} shape={list(array.shape)}", highlight=False)
        console.print(_preview(array, k, labels, threshold), highlight=False, markup=False)


def _run(registry: ModelRegistry, record: ModelVersion, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    backend = create_backend(registry.artifact_path(record), record.signature, DEFAULT_PLAN)
    backend.load()
    return backend.infer(inputs)


def _run_pipeline(
    registry: ModelRegistry, record: ModelVersion, inputs: dict[str, np.ndarray], given: list[str], image: Path | None
) -> dict[str, np.ndarray]:
    """The pipeline's steps served in process; the client's data refused by a step names what was given."""
    try:
        return asyncio.run(run_pipeline(registry, record, inputs))
    except InvalidInputError as exc:
        source = f"--image {image}" if image is not None else "--input " + " ".join(given)
        raise InvalidInputError(f"{source}: {exc}") from None


def _inputs(record: ModelVersion, given: list[str], image: Path | None) -> dict[str, np.ndarray]:
    if bool(given) == (image is not None):
        raise InvalidArgumentError("give exactly one of --input or --image")
    if given:
        one_file = len(given) == 1 and ("=" not in given[0] or Path(given[0]).exists())
        if not one_file or is_named_input(given[0], record.signature):
            return read_named_inputs(given, record.signature)
        return read_inputs(Path(given[0]), record.signature)
    assert image is not None
    first = record.signature.inputs[0]
    if len(record.signature.inputs) == 1 and first.datatype == "BYTES":
        return read_named_inputs([f"{first.name}={image}"], record.signature)
    if record.preprocessing is None:
        raise InvalidArgumentError(f"{record.ref} has no preprocessing settings; register it with --preprocessing")
    if not image.is_file():
        raise InvalidArgumentError(f"{image}: no such image file")
    try:
        tensor = image_to_tensor(decode_image(image.read_bytes()), record.preprocessing)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{image}: {exc}") from None
    return {first.name: tensor}


def _json_data(array: np.ndarray) -> Any:
    """Nested lists; BYTES elements as UTF-8 text."""
    if array.dtype == np.object_ or array.dtype.kind == "S":
        return np.vectorize(_text, otypes=[np.object_])(array).tolist() if array.size else array.tolist()
    return array.tolist()


def _text(element: Any) -> Any:
    return element.decode("utf-8", "replace") if isinstance(element, bytes) else element


def _preview(array: np.ndarray, k: int, labels: list[str], threshold: int = 20) -> str:
    if array.dtype == np.object_ or array.dtype.kind == "S":
        return "\n".join(f"  [{index}] {_text(element)}" for index, element in enumerate(array.reshape(-1)))
    if k > 0 and array.ndim == 2:
        rows = []
        for index, row in enumerate(array):
            ranked = ", ".join(f"{c['label']}={c['score']:.4f}" for c in top_k(row, k, labels))
            rows.append(f"  row {index}: {ranked}")
        return "\n".join(rows)
    return np.array2string(array, threshold=threshold, precision=5)
