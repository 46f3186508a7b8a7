"""What an edge device pulls besides the artifact: the version's record and its signatures.

``GET /v2/models/{name}[/versions/{v}]/package`` serves a :class:`ModelPackage`; the artifact's
bytes come from ``.../artifact``. The device hashes the bytes it received, checks them against
``record.digest`` and checks a signature by a key it trusts
(:func:`mcp2026ai.registry.signing.check_signatures`) before it runs them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.records import ModelVersion
from mcp2026ai.registry.signing import ModelSignature, signatures

PACKAGE_FORMAT = "mcp2026ai/model-package/v1"


class ModelPackage(BaseModel):
    model_config = ConfigDict(frozen=True)

    package_format: Literal["mcp2026ai/model-package/v1"] = "mcp2026ai/model-package/v1"
    record: ModelVersion
    signatures: list[ModelSignature]


def model_package(registry: ModelRegistry, record: ModelVersion) -> ModelPackage:
    return ModelPackage(record=record, signatures=signatures(registry, record))
