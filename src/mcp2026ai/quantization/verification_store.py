"""Verification results kept in the registry catalog, and what the policy asks of them.

Each ``mcp verify`` run is stored as a ``verification`` annotation of the verified version. The
policy may choose an int8/fp16 version only when :func:`precision_allowed` says so: a passing
verification exists and its drift is within the contract's ``accuracy.max_drift``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import Precision
from mcp2026ai.registry import ModelRegistry, ModelVersion

KIND = "verification"
QUANTIZED_TAG = "quantized"
PRECISION_TAG = "precision"


class Verification(BaseModel):
    """One comparison of a version against a baseline version of the same model."""

    model_config = ConfigDict(frozen=True)

    baseline: str = Field(description="Baseline version, e.g. 0.1.0.")
    precision: str = Field("fp32", description="Precision of the verified version (fp32, fp16, int8).")
    rel_l2: float = Field(description="Worst relative L2 drift over the outputs.")
    top1_agreement: float | None = None
    confidence_shift: float | None = None
    tolerance: float
    passed: bool
    samples: int = 0
    outputs: dict[str, float] = Field(default_factory=dict, description="Relative L2 drift per output.")
    data: str = ""


def record_verification(
    registry: ModelRegistry, name: str, version: str, verification: Verification, at: datetime
) -> None:
    registry.catalog.annotate(name, version, KIND, verification.model_dump(mode="json"), at=at)


def verifications(registry: ModelRegistry, name: str, version: str) -> list[tuple[datetime, Verification]]:
    """Every stored verification of ``name:version``, oldest first."""
    rows = registry.catalog.annotations(name, KIND, version)
    return [(at, Verification.model_validate(payload)) for _, at, payload in rows]


def latest_verification(registry: ModelRegistry, name: str, version: str) -> Verification | None:
    rows = verifications(registry, name, version)
    return rows[-1][1] if rows else None


def verified_drift(registry: ModelRegistry, name: str, version: str) -> float | None:
    """The drift of the latest passing verification, or None if the version never passed one."""
    passing = [verification for _, verification in verifications(registry, name, version) if verification.passed]
    return passing[-1].rel_l2 if passing else None


def version_precision(record: ModelVersion) -> Precision:
    """The ``precision`` tag, else int8/fp16 from the ``quantized`` scheme tag, else fp32."""
    if record.tags.get(PRECISION_TAG) in {precision.value for precision in Precision}:
        return Precision(record.tags[PRECISION_TAG])
    scheme = record.tags.get(QUANTIZED_TAG, "")
    if scheme.startswith("int8"):
        return Precision.INT8
    if scheme == "fp16":
        return Precision.FP16
    return Precision.FP32


def precision_allowed(registry: ModelRegistry, record: ModelVersion, max_drift: float) -> bool:
    """fp32 always; int8/fp16 only when verified with drift <= ``max_drift`` (contract accuracy)."""
    if version_precision(record) is Precision.FP32:
        return True
    drift = verified_drift(registry, record.name, record.version)
    return drift is not None and drift <= max_drift
