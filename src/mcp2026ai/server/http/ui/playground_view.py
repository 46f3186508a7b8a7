"""What the Playground offers: the served language models (a streamed chat through the server's own
``/v1/chat/completions``) and the served tensor models (an image upload through ``/v1/infer`` for
those with image preprocessing or one BYTES input, such as the OCR pipeline, which takes the encoded
image; else a v2 JSON request prefilled from the signature).

An upload goes through ``/v1/infer`` as any client's request: the caller's token and its infer scope,
the server's body limits (:func:`max_upload_bytes` tells the page the largest image it may send)."""

from __future__ import annotations

import json
from typing import Any

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.server.config import ServerConfig

_EXAMPLE_VALUES = {"BOOL": False, "BYTES": "text"}
JSON_ENVELOPE_BYTES = 4096
"""Room left in /v1/infer's body for the JSON around the base64 image (model name, top_k)."""


def max_upload_bytes(config: ServerConfig) -> int:
    """The largest image file /v1/infer takes: its body limit, less base64's third and the JSON around it."""
    body_limit = min(config.max_request_bytes, config.max_json_bytes)
    return max(0, (body_limit - JSON_ENVELOPE_BYTES) * 3 // 4)


def takes_encoded_bytes(signature: Signature) -> bool:
    """One BYTES input: /v1/infer gives it the uploaded file's bytes (the model decodes the image)."""
    return len(signature.inputs) == 1 and signature.inputs[0].datatype == "BYTES"


def playground_models(plane: DataPlane) -> dict[str, list[dict[str, Any]]]:
    language = sorted(plane.llms.names())
    tensors = []
    for name in sorted(plane.models.loaded_names()):
        record = plane.models.get(name).record
        image = record.preprocessing is not None or takes_encoded_bytes(record.signature)
        tensors.append(
            {
                "name": name,
                "version": record.version,
                "image": image,
                "example": "" if image else json.dumps(example_request(record.signature.inputs)),
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
