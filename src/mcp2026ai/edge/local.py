"""A model run on this device: a verified artifact loaded on the local runtime."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcp2026ai.errors import IntegrityError, InvalidInputError
from mcp2026ai.imaging import decode_image, image_to_tensor, top_k
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.signing import ModelSignature, check_signatures, read_verified_artifact
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import DEFAULT_PLAN
from mcp2026ai.runtime.validation import validate_inputs
from mcp2026ai.security.trust import TrustedKeys


@dataclass
class LocalModel:
    record: ModelVersion
    backend: Backend
    source: str
    """Where it came from, for the result's reason: ``local registry`` or ``pulled from <url>``."""

    def infer(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        validate_inputs(self.record.signature, inputs)
        return self.backend.infer(dict(inputs))

    def classify(self, image: bytes, k: int) -> list[dict[str, Any]]:
        """The top-k classes of an encoded image, as the server's ``/v1/infer`` answers them."""
        prep = self.record.preprocessing
        if prep is None:
            raise InvalidInputError(f"model {self.record.ref} has no image preprocessing settings")
        tensor = image_to_tensor(decode_image(image), prep)
        scores = next(iter(self.infer({self.record.signature.inputs[0].name: tensor}).values()))
        return top_k(np.asarray(scores)[0], k, prep.labels)

    def close(self) -> None:
        self.backend.unload()


def from_registry(registry: ModelRegistry, record: ModelVersion, trusted: TrustedKeys | None) -> LocalModel:
    """A version of the local registry; with ``trusted`` keys its signature must verify first."""
    data = read_verified_artifact(registry, record, trusted) if trusted is not None else registry.artifact_bytes(record)
    return _loaded(record, data, "local registry")


def from_package(
    record: ModelVersion,
    data: bytes,
    signatures: list[ModelSignature],
    trusted: TrustedKeys | None,
    source: str,
) -> LocalModel:
    """A pulled version: the bytes must hash to the record's digest and, with ``trusted`` keys, carry
    a signature by one of them over that digest and the record."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != record.digest:
        raise IntegrityError(f"{record.ref} from {source}: artifact sha256 {digest[:12]} is not {record.digest[:12]}")
    if trusted is not None:
        check_signatures(record, digest, signatures, trusted)
    return _loaded(record, data, source)


def _loaded(record: ModelVersion, data: bytes, source: str) -> LocalModel:
    backend = create_backend(data, record.signature, DEFAULT_PLAN, label=record.ref)
    backend.load()
    return LocalModel(record, backend, source)
