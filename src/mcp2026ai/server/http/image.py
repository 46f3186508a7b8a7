"""POST /v1/infer: a base64 JPEG/PNG in; top-k classes out, using the registered preprocessing.

A model whose one input is BYTES (the bundled OCR pipeline, a Triton Python preprocessing model)
decodes the image itself: it gets the encoded bytes as that tensor, and the answer is its outputs,
named, as JSON (BYTES elements as UTF-8 text)."""

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
    preprocessing: Preprocessing | None
    """None: the model took the encoded image as a BYTES tensor (its outputs are answered as they are)."""
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
    first = record.signature.inputs[0]
    encoded = _image_bytes(document.get("image"))
    prep = record.preprocessing
    if len(record.signature.inputs) == 1 and first.datatype == "BYTES":
        tensor = np.empty([1] * max(1, len(first.shape)), dtype=np.object_)
        tensor.flat[0] = encoded
        prep = None
    elif prep is None:
        raise InvalidInputError(f"model {record.ref} has no image preprocessing settings")
    else:
        tensor = image_to_tensor(decode_image(encoded), prep)
    request = InferenceRequest(model=record.name, version=record.version, inputs={first.name: tensor}, headers=headers)
    return ImageRequest(request, prep, k)


def predictions(image: ImageRequest, response: InferenceResponse) -> dict[str, Any]:
    answer = {"model": response.model, "version": response.version, "id": response.id}
    if image.preprocessing is None:
        return answer | {"outputs": {name: _json_value(value) for name, value in response.outputs.items()}}
    scores = np.asarray(next(iter(response.outputs.values())))[0]
    return answer | {"predictions": top_k(scores, image.top_k, image.preprocessing.labels)}


def _json_value(value: Any) -> Any:
    array = np.asarray(value)
    if array.dtype == np.object_ or array.dtype.kind == "S":
        return np.vectorize(_text, otypes=[np.object_])(array).tolist() if array.size else array.tolist()
    return array.tolist()


def _text(element: Any) -> Any:
    return element.decode("utf-8", "replace") if isinstance(element, bytes) else element


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
