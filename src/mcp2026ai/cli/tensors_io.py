"""Read inference inputs for the CLI from .npy, .npz or .json files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.dtypes import numpy_dtype
from mcp2026ai.ir.signature import Signature


def read_inputs(path: Path, signature: Signature) -> dict[str, np.ndarray]:
    """Named input arrays, cast to the signature's datatypes where the file gave plain numbers."""
    if not path.exists():
        raise InvalidArgumentError(f"{path}: no such input file")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return _single_input(np.load(path, allow_pickle=False), signature, path)
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    if suffix == ".json":
        return _from_json(path, signature)
    raise InvalidArgumentError(f"{path}: unsupported input file type {suffix!r} (use .npy, .npz or .json)")


def _single_input(array: np.ndarray, signature: Signature, path: Path) -> dict[str, np.ndarray]:
    if len(signature.inputs) != 1:
        names = [spec.name for spec in signature.inputs]
        raise InvalidArgumentError(f"{path}: the model takes {len(names)} inputs {names}; use .npz or .json")
    return {signature.inputs[0].name: array}


def _from_json(path: Path, signature: Signature) -> dict[str, np.ndarray]:
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"{path}: not valid JSON ({exc})") from None
    if isinstance(document, dict) and isinstance(document.get("inputs"), list):
        document = _v2_request_inputs(document["inputs"], path)
    if isinstance(document, list):
        document = {spec.name: document for spec in signature.inputs[:1]}
    if not isinstance(document, dict):
        raise InvalidArgumentError(f"{path}: expected an object mapping input names to nested lists")
    arrays = {}
    for name, value in document.items():
        spec = signature.input(name)
        dtype = numpy_dtype(spec.datatype) if spec else None
        try:
            arrays[name] = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"{path}: input {name!r} cannot be converted ({exc})") from None
        if spec and arrays[name].ndim == len(spec.shape) - 1:
            arrays[name] = arrays[name][np.newaxis]
    return arrays


def _v2_request_inputs(items: list[Any], path: Path) -> dict[str, Any]:
    """``{"inputs": [{"name", "shape", "datatype", "data"}]}`` as in a v2 infer request."""
    named = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or "name" not in item or "data" not in item:
            raise InvalidArgumentError(f"{path}: inputs[{index}] needs 'name' and 'data'")
        data = np.asarray(item["data"])
        named[item["name"]] = data.reshape(item["shape"]) if "shape" in item else data
    return named
