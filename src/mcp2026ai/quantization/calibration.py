"""Sample data for calibration and verification: one .npz file, or a folder of .npy/.npz (and images).

Layout rules, checked against the model signature:

* ``.npz``: arrays named after the model inputs; each holds one sample or a batch of them.
* ``.npy``: for a single-input model, one sample or a batch.
* images (``.png``, ``.jpg``...): turned into tensors by the version's registered preprocessing.

Samples are stacked along the batch axis, then cut into feeds of the model's fixed batch size (or
``batch_size`` rows when the batch dimension is dynamic).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from onnxruntime.quantization import CalibrationDataReader

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.imaging import decode_image, image_to_tensor
from mcp2026ai.ir.dtypes import numpy_dtype
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.registry.records import Preprocessing

Feed = dict[str, np.ndarray]
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
DEFAULT_BATCH = 8


def load_samples(path: Path, signature: Signature, preprocessing: Preprocessing | None = None) -> Feed:
    """Every sample under ``path`` stacked per input name; InvalidArgumentError naming file and input."""
    parts: dict[str, list[np.ndarray]] = {spec.name: [] for spec in signature.inputs}
    for file in _files(path):
        for name, array in _read(file, signature, preprocessing).items():
            spec = signature.input(name)
            if spec is None:
                known = ", ".join(parts)
                raise InvalidArgumentError(f"{file}: array {name!r} is not a model input (inputs: {known})")
            parts[name].append(_as_batch(array, spec, file))
    missing = [name for name, arrays in parts.items() if not arrays]
    if missing:
        raise InvalidArgumentError(f"{path}: no samples for input(s) {', '.join(missing)}")
    stacked = {name: np.concatenate(arrays) for name, arrays in parts.items()}
    rows = {name: len(array) for name, array in stacked.items()}
    if len(set(rows.values())) != 1:
        raise InvalidArgumentError(f"{path}: inputs have different sample counts {rows}")
    return stacked


def feeds(samples: Feed, signature: Signature, batch_size: int = DEFAULT_BATCH) -> list[Feed]:
    """Cut stacked samples into feeds the model accepts: its fixed batch size, else ``batch_size`` rows."""
    fixed = signature.inputs[0].shape[0] if signature.inputs[0].shape else -1
    total = len(next(iter(samples.values())))
    if fixed > 0 and total < fixed:
        raise InvalidArgumentError(f"{total} sample(s) cannot fill one batch of {fixed} (the model's fixed batch size)")
    size = fixed if fixed > 0 else batch_size
    stop = total - size + 1 if fixed > 0 else total
    return [{name: array[start : start + size] for name, array in samples.items()} for start in range(0, stop, size)]


class FeedReader(CalibrationDataReader):  # type: ignore[misc]
    """onnxruntime's calibration protocol over prepared feeds."""

    def __init__(self, batches: list[Feed]) -> None:
        self._batches = batches
        self._iterator: Iterator[Feed] = iter(batches)

    def get_next(self) -> Feed | None:
        return next(self._iterator, None)

    def rewind(self) -> None:
        self._iterator = iter(self._batches)


def _files(path: Path) -> list[Path]:
    if not path.exists():
        raise InvalidArgumentError(f"{path}: no such file or folder")
    if path.is_file():
        if path.suffix.lower() != ".npz":
            raise InvalidArgumentError(f"{path}: give one .npz file or a folder of .npy/.npz/image files")
        return [path]
    usable = (".npy", ".npz", *IMAGE_SUFFIXES)
    files = sorted(file for file in path.iterdir() if file.is_file() and file.suffix.lower() in usable)
    if not files:
        raise InvalidArgumentError(f"{path}: the folder has no .npy, .npz or image files")
    return files


def _read(file: Path, signature: Signature, preprocessing: Preprocessing | None) -> Feed:
    suffix = file.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        if preprocessing is None:
            raise InvalidArgumentError(
                f"{file}: images need the model's preprocessing settings (register it with them)"
            )
        return {signature.inputs[0].name: image_to_tensor(decode_image(file.read_bytes()), preprocessing)}
    try:
        if suffix == ".npz":
            with np.load(file, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        array = np.load(file, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{file}: not a readable numpy file ({exc})") from None
    if len(signature.inputs) != 1:
        raise InvalidArgumentError(f"{file}: the model has {len(signature.inputs)} inputs; use .npz files naming them")
    return {signature.inputs[0].name: array}


def _as_batch(array: np.ndarray, spec: TensorSpec, file: Path) -> np.ndarray:
    if not spec.shape:
        raise InvalidArgumentError(f"{file}: input {spec.name!r} is a scalar; samples need a batch dimension")
    if array.ndim == len(spec.shape) - 1:
        array = array[np.newaxis]
    if array.ndim != len(spec.shape) or not spec.accepts_shape((spec.shape[0], *array.shape[1:])):
        wanted = "x".join(str(dim) for dim in spec.shape)
        raise InvalidArgumentError(
            f"{file}: input {spec.name!r} has shape {list(array.shape)}, the model takes {wanted}"
        )
    dtype = numpy_dtype(spec.datatype)
    if array.dtype != dtype and not np.can_cast(array.dtype, dtype, casting="same_kind"):
        raise InvalidArgumentError(f"{file}: input {spec.name!r} is {array.dtype}, the model takes {spec.datatype}")
    return array.astype(dtype, copy=False)
