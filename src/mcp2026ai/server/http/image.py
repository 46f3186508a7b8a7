"""POST /v1/infer: a base64 JPEG/PNG in, top-k classes out, using the registered preprocessing."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import InvalidInputError
from mcp2026ai.imaging import decode_image, image_to_tensor, top_k
from mcp2026ai.inference import InferenceRequest, InferenceResponse
from mcp2026ai.registry.records import Preprocessing

MAX_TOP_K = 1000


@dataclass(frozen=True)
class ImageRequest:
    """A decoded /v1/infer call: the v2 request to run, and how to read its scores back."""

    request: InferenceRequest
    preprocessing: Preprocessing
    top_k: int


def requested_model(plane: DataPlane, document: Any, model_hint: str | None) -> str:
    """The model a call names (body ``model``, else the ``?model=`` hint, else the only one served)."""
    named = document.get("model") if isinstance(document, dict) else None
    return str(named or model_hint or _only_model(plane))


def image_request(plane: DataPlane, document: Any, model: str, headers: dict[str, str]) -> ImageRequest:
    if not isinstance(document, dict):
        raise InvalidInputError("request body must be a JSON object with an 'image' field")
    k = document.get("top_k", 5)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_TOP_K:
        raise InvalidInputError(f"top_k must be an integer in 1..{MAX_TOP_K}, got {k!r}")
    version = document.get("version")
    if version is not None and not isinstance(version, str):
        raise InvalidInputError(f"'version' must be a string, got {version!r}"[:200])
    record = plane.model_record(model, version)
    prep = record.preprocessing
    if prep is None:
        raise InvalidInputError(f"model {record.ref} has no image preprocessing settings")
    tensor = image_to_tensor(decode_image(_image_bytes(document.get("image"))), prep)
    request = InferenceRequest(
        model=record.name,
        version=record.version,
        inputs={record.signature.inputs[0].name: tensor},
        headers=headers,
    )
    return ImageRequest(request, prep, k)


def predictions(image: ImageRequest, response: InferenceResponse) -> dict[str, Any]:
    scores = np.asarray(next(iter(response.outputs.values())))[0]
    return {
        "model": response.model,
        "version": response.version,
        "id": response.id,
        "predictions": top_k(scores, image.top_k, image.preprocessing.labels),
    }


def _image_bytes(value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        raise InvalidInputError("'image' must be a base64-encoded JPEG or PNG string")
    if value.startswith("data:"):
        value = value.partition(",")[2]
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError("'image' is not valid base64") from None


def _only_model(plane: DataPlane) -> str:
    names = plane.served_names()
    if len(names) != 1:
        raise InvalidInputError(f"several models are served {names}; name one with 'model'")
    return names[0]
