"""The seeds' ``mcp-config.yaml`` for a language model: per-model generation defaults and resources.

::

    model: smollm2
    inference:
      strategy: standard            # or speculative_decoding
      parameters: {temperature: 0.3, max_new_tokens: 256, stop_sequences: ["\\n\\n", "<|im_end|>"]}
    resources: {min_replicas: 2, autoscale: {target_ongoing_requests: 4}}

The parameters are defaults: a request's own fields override them (OpenAI's ``max_tokens``, the
config's ``max_new_tokens``). ``resources`` is the contract's section (replicas and autoscaling go to
Ray Serve). The ``model`` must name a registered model: an unknown id is refused with the list,
never substituted by another.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp2026ai.contract import ResourceSpec
from mcp2026ai.errors import ContractError, NotFoundError
from mcp2026ai.messages import describe_validation_error, read_yaml_file
from mcp2026ai.registry import ModelRegistry, ModelVersion

ANNOTATION_KIND = "serving-config"
"""Catalog annotation under which `mcp model register --config` stores a version's config."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GenerationDefaults(_Section):
    """Sampling defaults of one model (OpenAI / vLLM meanings; None: the server's own default)."""

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=-1)
    min_p: float | None = Field(None, ge=0.0, le=1.0)
    repetition_penalty: float | None = Field(None, gt=0.0, le=10.0)
    presence_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(None, ge=-2.0, le=2.0)
    max_new_tokens: int | None = Field(None, ge=1, description="Tokens per answer when a request names none.")
    stop_sequences: list[str] = Field(default_factory=list, max_length=16)
    seed: int | None = Field(None, ge=0, lt=2**63)

    def over(self, base: GenerationDefaults) -> GenerationDefaults:
        """These defaults where set, ``base``'s elsewhere (a served config over the model's own)."""
        mine = {key: value for key, value in self.model_dump().items() if value is not None and value != []}
        return base.model_copy(update=mine)

    def fill(self, fields: dict[str, Any]) -> dict[str, Any]:
        """``fields`` (SamplingParams names, only what the request set) with the defaults for the rest."""
        defaults: dict[str, Any] = {
            key: value
            for key, value in self.model_dump(exclude={"max_new_tokens", "stop_sequences"}).items()
            if value is not None
        }
        if self.max_new_tokens is not None:
            defaults["max_tokens"] = self.max_new_tokens
        if self.stop_sequences:
            defaults["stop"] = tuple(self.stop_sequences)
        return defaults | {key: value for key, value in fields.items() if value is not None}


class InferenceSettings(_Section):
    strategy: Literal["standard", "speculative_decoding"] = "standard"
    parameters: GenerationDefaults = Field(default_factory=GenerationDefaults)


class ServingConfig(_Section):
    model: str = Field(min_length=1, description="A registered model's name.")
    inference: InferenceSettings = Field(default_factory=InferenceSettings)
    resources: ResourceSpec = Field(default_factory=ResourceSpec)


def parse_serving_config(document: Any, source: str) -> ServingConfig:
    if not isinstance(document, dict):
        raise ContractError(f"{source}: expected a mapping at the top level, got {type(document).__name__}")
    try:
        return ServingConfig.model_validate(document)
    except ValidationError as exc:
        raise ContractError(describe_validation_error(exc, source)) from None


def load_serving_config(path: Path) -> ServingConfig:
    return parse_serving_config(read_yaml_file(path, "config"), str(path))


def resolve_model(registry: ModelRegistry, config: ServingConfig, source: str) -> ModelVersion:
    """The registered version the config is for; an unknown id is refused with the registered names."""
    try:
        return registry.resolve(config.model)
    except NotFoundError:
        known = ", ".join(registry.model_names()) or "none"
        raise NotFoundError(
            f"{source}: model: {config.model!r} is not registered (registered: {known}); "
            "register it first, it is never replaced by another model"
        ) from None


def config_notes(config: ServingConfig, has_gpu: bool) -> list[str]:
    """What the config asks for that this host or this version will not do, one line each."""
    notes = []
    if config.resources.gpu_memory_gb is not None and not has_gpu:
        notes.append(
            f"resources.gpu_memory_gb: {config.resources.gpu_memory_gb:g} is ignored: this host has no GPU "
            "(the model runs on the CPU)"
        )
    if config.inference.strategy == "speculative_decoding":
        notes.append(
            "inference.strategy: speculative_decoding drafts by prompt lookup (tokens copied from the prompt or the "
            "answer so far) for every running sequence, greedy or sampled, and keeps a draft only while it is what "
            "the sequence would choose: faster where answers copy their input, backing off where drafts miss"
        )
    return notes


def store_config(registry: ModelRegistry, record: ModelVersion, config: ServingConfig) -> None:
    payload = config.model_dump(mode="json")
    registry.catalog.annotate(record.name, record.version, ANNOTATION_KIND, payload, datetime.now(UTC))


def stored_config(registry: ModelRegistry, record: ModelVersion) -> ServingConfig | None:
    """The latest config stored for ``record`` (None if there is none or it no longer validates)."""
    rows = registry.catalog.annotations(record.name, ANNOTATION_KIND, record.version)
    for _version, _at, payload in reversed(list(rows)):
        try:
            return ServingConfig.model_validate(payload)
        except ValidationError:
            continue
    return None
