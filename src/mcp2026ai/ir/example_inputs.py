"""Example inputs for formats that carry no input signature (TorchScript): specs, parsing, sample tensors.

A spec reads ``name:d1,d2,...[:DATATYPE]``, e.g. ``x:1,3,160,160`` or ``ids:1,128:INT64``; the
datatype is a KServe v2 name (FP32 when omitted) or a numpy name such as ``float32``.

A TorchScript file can carry its specs itself: as the extra file ``mcp/inputs.json`` saved with
``torch.jit.save(module, path, _extra_files={"mcp/inputs.json": ...})``, or as a sidecar file
``<model file>.inputs.json`` beside it. Both hold ``{"inputs": [{"name", "shape", "datatype"}],
"dynamic_batch": false}``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp2026ai.errors import InvalidInputError, ModelImportError
from mcp2026ai.ir.dtypes import V2_TO_NUMPY, numpy_dtype, v2_datatype

EMBEDDED_SPEC_NAME = "mcp/inputs.json"
SIDECAR_SUFFIX = ".inputs.json"


class InputSpec(BaseModel):
    """One named input of a model whose file does not declare its inputs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    shape: list[int] = Field(min_length=0, description="Concrete dimensions of the example input (each >= 1).")
    datatype: str = Field("FP32", description="KServe v2 datatype name.")

    def example(self, rng: np.random.Generator, batch: int | None = None) -> np.ndarray:
        """A seeded example tensor; ``batch`` replaces the leading dimension."""
        shape = tuple([batch, *self.shape[1:]] if batch is not None and self.shape else self.shape)
        dtype = numpy_dtype(self.datatype)
        if dtype.kind == "f":
            return rng.standard_normal(shape).astype(dtype)
        if dtype.kind == "b":
            return rng.random(shape) < 0.5
        if dtype.kind in "iu":
            return rng.integers(0, 10, size=shape).astype(dtype)
        raise InvalidInputError(f"input {self.name!r}: no example values for datatype {self.datatype}")


class InputSpecs(BaseModel):
    """The document stored inside or beside a TorchScript file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inputs: list[InputSpec] = Field(min_length=1)
    dynamic_batch: bool = False


def parse_input_spec(text: str) -> InputSpec:
    """``x:1,3,160,160[:FP32]`` -> InputSpec; InvalidInputError naming the text otherwise."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0]:
        raise InvalidInputError(f"input spec {text!r}: expected name:d1,d2,...[:DATATYPE], e.g. x:1,3,224,224")
    try:
        shape = [int(dim) for dim in parts[1].split(",")] if parts[1] else []
    except ValueError:
        raise InvalidInputError(f"input spec {text!r}: dimensions must be integers") from None
    if any(dim < 1 for dim in shape):
        raise InvalidInputError(f"input spec {text!r}: dimensions must be >= 1 (example inputs are concrete)")
    datatype = _datatype(parts[2], text) if len(parts) == 3 else "FP32"
    return InputSpec(name=parts[0], shape=shape, datatype=datatype)


def _datatype(name: str, text: str) -> str:
    if name.upper() in V2_TO_NUMPY and name.upper() != "BYTES":
        return name.upper()
    try:
        return v2_datatype(np.dtype(name))
    except TypeError:
        raise InvalidInputError(f"input spec {text!r}: unknown datatype {name!r}") from None


def parse_specs_document(text: str, where: str) -> InputSpecs:
    try:
        return InputSpecs.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = str(exc).replace("\n", " ")[:300]
        raise ModelImportError(f"{where}: invalid input specs ({detail})") from None


def sidecar_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + SIDECAR_SUFFIX)


def specs_document(specs: list[InputSpec], dynamic_batch: bool) -> str:
    return InputSpecs(inputs=specs, dynamic_batch=dynamic_batch).model_dump_json(indent=2)
