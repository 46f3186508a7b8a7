"""Synthesized request tensors, shaped from the server's model metadata and ``--shape`` overrides.

As perf_analyzer: for a batchable model (``max_batch_size`` > 0 in its config) the metadata's leading
dimension is the batch, ``--shape`` gives the other dimensions, and ``-b`` the batch. Dimensions still
dynamic after that are an error that names the input and the option to pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.dtypes import numpy_dtype


@dataclass(frozen=True)
class InputSpec:
    name: str
    datatype: str
    shape: tuple[int, ...]
    """As the metadata reports it, batch dimension included; -1 marks a dynamic dimension."""


@dataclass(frozen=True)
class ModelInfo:
    name: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[str, ...]
    max_batch_size: int


def model_info(metadata: Mapping[str, Any], config: Mapping[str, Any] | None) -> ModelInfo:
    """From v2 model metadata (and Triton's model config, when the server has one)."""
    inputs = tuple(
        InputSpec(item["name"], item["datatype"], tuple(int(dim) for dim in item.get("shape", [])))
        for item in metadata.get("inputs", [])
    )
    if not inputs:
        raise InvalidArgumentError(f"model {metadata.get('name')!r} reports no inputs")
    if config is not None:
        max_batch = int(config.get("max_batch_size", 0) or 0)
    else:  # no config endpoint: a leading dynamic dimension on every input is taken as the batch
        max_batch = 1 if all(spec.shape[:1] == (-1,) for spec in inputs) else 0
    outputs = tuple(str(item["name"]) for item in metadata.get("outputs", []))
    return ModelInfo(str(metadata.get("name", "")), inputs, outputs, max_batch)


def request_shapes(info: ModelInfo, overrides: Mapping[str, list[int]], batch_size: int) -> dict[str, list[int]]:
    """The full shape of each input in one request."""
    unknown = sorted(set(overrides) - {spec.name for spec in info.inputs})
    if unknown:
        known = ", ".join(spec.name for spec in info.inputs)
        raise InvalidArgumentError(f"--shape names unknown input(s) {', '.join(unknown)} (inputs: {known})")
    if info.max_batch_size == 0 and batch_size != 1:
        raise InvalidArgumentError(f"-b {batch_size}: model {info.name!r} does not batch (max_batch_size 0)")
    if info.max_batch_size and batch_size > info.max_batch_size:
        raise InvalidArgumentError(f"-b {batch_size}: model {info.name!r} has max_batch_size {info.max_batch_size}")
    shapes = {}
    for spec in info.inputs:
        dims = list(spec.shape[1:] if info.max_batch_size else spec.shape)
        dims = list(overrides.get(spec.name, dims))
        if any(dim < 0 for dim in dims):
            example = ",".join(str(dim if dim > 0 else 1) for dim in dims)
            raise InvalidArgumentError(
                f"input {spec.name!r} has dynamic dimensions {dims}: pass --shape {spec.name}:{example}"
            )
        shapes[spec.name] = [batch_size, *dims] if info.max_batch_size else dims
    return shapes


def synthesize(info: ModelInfo, shapes: Mapping[str, list[int]], seed: int = 0) -> dict[str, np.ndarray]:
    """Random tensors of the right datatype and shape (the same data is sent with every request)."""
    rng = np.random.default_rng(seed)
    return {spec.name: _random(rng, spec.datatype, shapes[spec.name]) for spec in info.inputs}


def _random(rng: np.random.Generator, datatype: str, shape: list[int]) -> np.ndarray:
    if datatype == "BYTES":
        return np.full(shape, b"mcp-bench", dtype=np.object_)
    dtype = numpy_dtype(datatype)
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float64).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 100, size=shape).astype(dtype)
