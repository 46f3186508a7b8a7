"""Records the registry stores and returns."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import InferenceContract
from mcp2026ai.ir.signature import Signature


class Stage(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PRODUCTION = "production"
    ARCHIVED = "archived"


class TextPreprocessing(BaseModel):
    """How ``/v1/embeddings`` turns text into a sentence encoder's inputs and its output into vectors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokenizer: str = Field(
        min_length=1,
        description="The model's tokenizer.json: a file path at registration, stored as its sha256 digest.",
    )
    max_length: int = Field(256, ge=1, le=65536, description="Most tokens per input (longer ones are a 400).")
    pooling: Literal["mean", "cls"] = Field("mean", description="Token vectors -> one: masked mean, or [CLS].")
    normalize: bool = Field(True, description="Scale each embedding to unit length.")
    output: str | None = Field(None, description="The output holding token vectors; None: the first output.")
    matryoshka_dimensions: list[int] = Field(
        default_factory=list,
        description="Shorter sizes the model was trained to be cut to (``dimensions``); empty: full size only.",
    )


class Preprocessing(BaseModel):
    """How the legacy image endpoint turns a picture into the model's input tensor (and, with ``text``,
    how the embeddings endpoint turns text into a sentence encoder's inputs)."""

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
    text: TextPreprocessing | None = None


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
