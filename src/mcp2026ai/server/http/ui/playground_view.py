"""What the Playground offers: the served language models (a streamed chat through the server's own
``/v1/chat/completions``) and the served tensor models (an image upload through ``/v1/infer`` for
those with image preprocessing, else a v2 JSON request prefilled from the signature)."""

from __future__ import annotations

import json
from typing import Any

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.ir.signature import TensorSpec

_EXAMPLE_VALUES = {"BOOL": False, "BYTES": "text"}


def playground_models(plane: DataPlane) -> dict[str, list[dict[str, Any]]]:
    language = sorted(plane.llms.names())
    tensors = []
    for name in sorted(plane.models.loaded_names()):
        record = plane.models.get(name).record
        tensors.append(
            {
                "name": name,
                "version": record.version,
                "image": record.preprocessing is not None,
                "example": "" if record.preprocessing else json.dumps(example_request(record.signature.inputs)),
            }
        )
    return {"language": [{"name": name} for name in language], "tensor": tensors}


def example_request(inputs: list[TensorSpec]) -> dict[str, Any]:
    """A v2 request with one row of zeros per input (dynamic dimensions taken as 1)."""
    return {"inputs": [_example_input(spec) for spec in inputs]}


def _example_input(spec: TensorSpec) -> dict[str, Any]:
    shape = [dim if dim > 0 else 1 for dim in spec.shape]
    count = 1
    for dim in shape:
        count *= dim
    value = _EXAMPLE_VALUES.get(spec.datatype, 0)
    return {"name": spec.name, "datatype": spec.datatype, "shape": shape, "data": [value] * min(count, 4096)}
