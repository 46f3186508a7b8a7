"""Read inference inputs for the CLI: one .npy, .npz or .json file, or ``NAME=FILE`` per input (a BYTES
input takes the file's bytes as its one element, e.g. an encoded image; others a .npy array)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.dtypes import numpy_dtype
from mcp2026ai.ir.signature import Signature, TensorSpec

MAX_INPUT_FILE_BYTES = 64 * 1024 * 1024
"""A ``NAME=FILE`` input is read whole: larger files are refused before reading (the server's default
request limit is the same 64 MiB)."""


def read_inputs(path: Path, signature: Signature) -> dict[str, np.ndarray]:
    """Named input arrays, cast to the signature's datatypes where the file gave plain numbers."""
    if not path.exists():
        raise InvalidArgumentError(f"{path}: no such input file")
    suffix = path.suffix.lower()
    if suffix in (".npy", ".npz"):
        return _from_numpy(path, signature)
    if suffix == ".json":
        return _from_json(path, signature)
    raise InvalidArgumentError(f"{path}: unsupported input file type {suffix!r} (use .npy, .npz or .json)")


def _from_numpy(path: Path, signature: Signature) -> dict[str, np.ndarray]:
    """One array (.npy) for a single-input model, or named arrays (.npz); pickled data is refused."""
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            return _single_input(loaded, signature, path)
        with loaded:
            return {name: loaded[name] for name in loaded.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgumentError(f"{path}: not a readable numpy file ({reason})") from None


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
        try:
            data = np.asarray(item["data"])
            named[item["name"]] = data.reshape(item["shape"]) if "shape" in item else data
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"{path}: inputs[{index}] {item['name']!r}: {exc}") from None
    return named


def is_named_input(text: str, signature: Signature) -> bool:
    """``NAME=FILE`` (or ``NAME=@FILE``) with NAME one of the signature's inputs."""
    name, sep, _ = text.partition("=")
    return bool(sep) and signature.input(name) is not None


def read_named_inputs(given: list[str], signature: Signature) -> dict[str, np.ndarray]:
    """``NAME=FILE`` / ``NAME=@FILE`` per input: a BYTES input gets the file's bytes as its one element
    (shaped as the signature's, dynamic dimensions 1), any other a .npy array."""
    inputs: dict[str, np.ndarray] = {}
    for text in given:
        name, sep, location = text.partition("=")
        spec = signature.input(name) if sep else None
        if spec is None:
            known = [each.name for each in signature.inputs]
            raise InvalidArgumentError(f"--input {text}: expected NAME=FILE with NAME one of {known}")
        if name in inputs:
            raise InvalidArgumentError(f"--input {text}: input {name!r} is given twice")
        inputs[name] = read_input_file(spec, Path(location.removeprefix("@")), text)
    return inputs


def read_input_file(spec: TensorSpec, path: Path, given: str) -> np.ndarray:
    try:
        size = path.stat().st_size
        if not path.is_file() or size > MAX_INPUT_FILE_BYTES:
            raise InvalidArgumentError(f"--input {given}: {path} is not a file of at most {MAX_INPUT_FILE_BYTES} bytes")
        return tensor_from_bytes(spec, path.read_bytes(), f"--input {given}: {path}")
    except FileNotFoundError:
        raise InvalidArgumentError(f"--input {given}: {path}: no such file") from None
    except PermissionError:
        raise InvalidArgumentError(f"--input {given}: {path}: not readable (permission denied)") from None
    except OSError as exc:
        raise InvalidArgumentError(f"--input {given}: {path}: cannot be read ({exc.strerror or exc})") from None


def tensor_from_bytes(spec: TensorSpec, data: bytes, where: str) -> np.ndarray:
    """A BYTES input: ``data`` as its one element (shaped as the signature's, dynamic dimensions 1);
    any other: ``data`` read as a .npy array of the input's datatype."""
    if spec.datatype == "BYTES":
        shape = [1 if dim == -1 else dim for dim in spec.shape] or [1]
        if int(np.prod(shape)) != 1:
            raise InvalidArgumentError(f"{where}: input {spec.name!r} takes {shape} elements, not one file")
        tensor = np.empty(shape, dtype=np.object_)
        tensor.flat[0] = data
        return tensor
    try:
        loaded: np.ndarray = np.load(io.BytesIO(data), allow_pickle=False).astype(numpy_dtype(spec.datatype))
    except (OSError, ValueError, EOFError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgumentError(f"{where}: cannot be read as {spec.datatype} ({reason})") from None
    return loaded
