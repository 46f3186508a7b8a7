"""Synthetic inputs built from a model signature, for profiling plans without real traffic.

The batch dimension takes the plan's batch size. Other dynamic dimensions come, in order, from an
explicit override (``x=1x3x48x192``), the model's image preprocessing (height/width of an NCHW or NHWC
input, 3 channels) or :attr:`SyntheticShapes.default_dim`.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.dtypes import numpy_dtype
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.registry import Preprocessing


class SyntheticShapes(BaseModel):
    """How dynamic dimensions are filled when building synthetic inputs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_dim: int = Field(32, ge=1, le=4096, description="Size of a dynamic non-batch dimension.")
    overrides: dict[str, list[int]] = Field(
        default_factory=dict, description="Full shape per input name; a dynamic batch dimension is replaced."
    )


def parse_shape_override(text: str) -> tuple[str, list[int]]:
    """``name=1x3x48x192`` -> ``("name", [1, 3, 48, 192])``."""
    name, sep, dims = text.partition("=")
    try:
        shape = [int(dim) for dim in dims.lower().split("x")] if sep else []
    except ValueError:
        shape = []
    if not name or not shape or any(dim < 1 for dim in shape):
        raise InvalidArgumentError(f"--shape {text!r}: expected NAME=D1xD2x... with positive sizes, e.g. x=1x3x48x192")
    return name, shape


def _from_preprocessing(spec: TensorSpec, prep: Preprocessing | None) -> list[int | None]:
    hints: list[int | None] = [None] * len(spec.shape)
    if prep is None or len(spec.shape) != 4:
        return hints
    if prep.layout == "NCHW":
        hints[1:] = [3, prep.height, prep.width]
    else:
        hints[1:] = [prep.height, prep.width, 3]
    return hints


def resolve_shape(
    spec: TensorSpec, batch: int, shapes: SyntheticShapes, preprocessing: Preprocessing | None = None
) -> list[int]:
    """A concrete shape for ``spec`` at ``batch`` rows."""
    override = shapes.overrides.get(spec.name)
    if override is not None:
        if not spec.accepts_shape(tuple(override)):
            raise InvalidArgumentError(f"--shape {spec.name}: {override} does not fit the model's shape {spec.shape}")
        shape = list(override)
        if spec.batch_dynamic:
            shape[0] = batch
        return shape
    hints = _from_preprocessing(spec, preprocessing)
    shape = []
    for axis, dim in enumerate(spec.shape):
        if dim != -1:
            shape.append(dim)
        elif axis == 0:
            shape.append(batch)
        else:
            shape.append(hints[axis] or shapes.default_dim)
    return shape


def _random_array(datatype: str, shape: list[int], rng: np.random.Generator) -> np.ndarray:
    dtype = numpy_dtype(datatype)
    if datatype == "BYTES":
        return np.full(shape, b"synthetic", dtype=object)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 10, size=shape).astype(dtype)


def synthetic_inputs(
    signature: Signature,
    batch: int,
    shapes: SyntheticShapes | None = None,
    preprocessing: Preprocessing | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Random tensors matching the signature at ``batch`` rows (deterministic for a seed)."""
    shapes = shapes or SyntheticShapes()
    rng = np.random.default_rng(seed)
    return {
        spec.name: _random_array(spec.datatype, resolve_shape(spec, batch, shapes, preprocessing), rng)
        for spec in signature.inputs
    }
