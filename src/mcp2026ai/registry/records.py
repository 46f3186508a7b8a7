"""Records the registry stores and returns."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import InferenceContract
from mcp2026ai.ir.signature import Signature


class Stage(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PRODUCTION = "production"
    ARCHIVED = "archived"


class Preprocessing(BaseModel):
    """How the legacy image endpoint turns a picture into the model's input tensor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    height: int = Field(224, ge=1, le=8192)
    width: int = Field(224, ge=1, le=8192)
    mean: list[float] = Field(default_factory=lambda: [0.485, 0.456, 0.406])
    std: list[float] = Field(default_factory=lambda: [0.229, 0.224, 0.225])
    scale: float = Field(1 / 255, description="Multiplier applied to 0..255 pixels before mean/std.")
    layout: str = Field("NCHW", pattern="^(NCHW|NHWC)$")
    color: str = Field("RGB", pattern="^(RGB|BGR)$")
    resize: str = Field(
        "stretch",
        pattern="^(stretch|pad)$",
        description="stretch to height x width, or keep the aspect ratio at height and zero-pad the width",
    )
    labels: list[str] = Field(default_factory=list)


class ModelVersion(BaseModel):
    """One registered version of a model."""

    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    number: int = Field(1, ge=1, description="Triton-style integer alias: registration order within the model.")
    stage: Stage
    format: str
    digest: str
    signature: Signature
    contract: InferenceContract | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    preprocessing: Preprocessing | None = None
    parent: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.version}"

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "number": self.number,
            "stage": self.stage.value,
            "format": self.format,
            "digest": self.digest[:12],
            "created": self.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            "tags": ",".join(f"{k}={v}" for k, v in sorted(self.tags.items())),
        }
