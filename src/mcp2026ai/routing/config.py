"""Rollout configuration per model: stable, canary and weight, shadow, analysis and breaker settings.

A rollout is a YAML document (one mapping, or a list of mappings for several models)::

    name: ocr-cls
    stable: 1.0.0            # omitted: the registry's default version when it is set
    canary: 1.1.0
    weight: 20               # percent of users (sticky by X-User-Id) sent to the canary
    shadow: 1.2.0
    shadow_percent: 10       # percent of requests mirrored to the shadow
    fallback_model: ocr-cls-small
    analysis: {interval_s: 60, max_5xx_rate: 0.035, max_error_rate: 0.05, max_p95_ms: 800}
    breaker: {failure_rate: 0.5, min_requests: 20, window_s: 10, cooldown_s: 5, half_open_probes: 3}

Errors name the file, the field path and the value, e.g. ``rollout.yaml: weight: Input should be
less than or equal to 100 (got 120)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mcp2026ai.errors import InvalidArgumentError, MCPError
from mcp2026ai.messages import describe_validation_error, yaml_location
from mcp2026ai.registry.model_registry import validate_model_name
from mcp2026ai.registry.versioning import SemVer


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AnalysisSpec(_Section):
    """Canary analysis; the defaults follow Flagger's (1 minute interval, absolute thresholds)."""

    interval_s: float = Field(60.0, gt=0, le=86_400, description="Length of one analysis window in seconds.")
    max_5xx_rate: float = Field(0.035, ge=0, le=1, description="Largest share of server errors (5xx).")
    max_error_rate: float = Field(0.05, ge=0, le=1, description="Largest share of failed requests (4xx + 5xx).")
    max_p95_ms: float = Field(800.0, gt=0, description="Largest p95 latency in milliseconds.")
    min_requests: int = Field(10, ge=1, description="Fewer canary requests in a window: no verdict.")
    threshold: int = Field(1, ge=1, description="Failed checks in a row before rolling back (Flagger's).")


class BreakerSpec(_Section):
    """Circuit breaker per model version."""

    failure_rate: float = Field(0.5, gt=0, lt=1, description="Open when the failure share exceeds this.")
    min_requests: int = Field(20, ge=1, description="Requests the window must hold before it may open.")
    window_s: float = Field(10.0, gt=0, le=3600, description="Rolling window in seconds.")
    cooldown_s: float = Field(5.0, gt=0, le=3600, description="Time open before half-open probes start.")
    half_open_probes: int = Field(3, ge=1, le=1000, description="Probes allowed half-open; all must succeed.")


class RolloutConfig(_Section):
    """How one model's traffic is split between its versions."""

    name: str = Field(description="Model name.")
    stable: str | None = Field(None, description="Stable version; None: the registry's default version.")
    canary: str | None = Field(None, description="Canary version.")
    weight: int = Field(0, ge=0, le=100, description="Percent of users routed to the canary.")
    shadow: str | None = Field(None, description="Version that receives mirrored traffic.")
    shadow_percent: float = Field(0.0, ge=0, le=100, description="Percent of requests mirrored to the shadow.")
    fallback_model: str | None = Field(None, description="Model served while a version's circuit is open.")
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)
    breaker: BreakerSpec = Field(default_factory=BreakerSpec)

    @field_validator("name", "fallback_model")
    @classmethod
    def _model_name(cls, value: str | None) -> str | None:
        return None if value is None else _checked(validate_model_name, value)

    @field_validator("stable", "canary", "shadow", mode="before")
    @classmethod
    def _version(cls, value: Any) -> Any:
        if value is None or value == "":
            return None
        return _checked(lambda text: str(SemVer.parse(text)), str(value))

    @model_validator(mode="after")
    def _consistent(self) -> RolloutConfig:
        if self.weight and self.canary is None:
            raise ValueError(f"weight {self.weight} needs a canary version")
        if self.canary is not None and self.canary == self.stable:
            raise ValueError(f"canary {self.canary} is also the stable version")
        if self.shadow_percent and self.shadow is None:
            raise ValueError(f"shadow_percent {self.shadow_percent:g} needs a shadow version")
        if self.fallback_model == self.name:
            raise ValueError(f"fallback_model {self.name!r} is the model itself")
        return self

    @property
    def canary_active(self) -> bool:
        return self.canary is not None and self.weight > 0

    def stable_only(self) -> RolloutConfig:
        """This rollout without its canary (and without a shadow that was the canary)."""
        shadow = None if self.shadow == self.canary else self.shadow
        return self.model_copy(
            update={"canary": None, "weight": 0, "shadow": shadow, "shadow_percent": self.shadow_percent * bool(shadow)}
        )


def _checked(check: Any, value: str) -> str:
    """Run a domain check inside a pydantic validator (which reports ValueError, not MCPError)."""
    try:
        return str(check(value))
    except MCPError as exc:
        raise ValueError(str(exc)) from None


def parse_rollout(document: Any, source: str = "rollout") -> RolloutConfig:
    if not isinstance(document, dict):
        raise InvalidArgumentError(f"{source}: expected a mapping, got {type(document).__name__}")
    try:
        return RolloutConfig.model_validate(document)
    except ValidationError as exc:
        raise InvalidArgumentError(describe_validation_error(exc, source)) from None


def load_rollouts(path: Path | str, name: str | None = None) -> list[RolloutConfig]:
    """Read a rollout YAML file: one mapping or a list; ``name`` fills a mapping that lacks one."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArgumentError(f"{path}: rollout file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"{path}: cannot read rollout file ({exc})") from None
    except yaml.YAMLError as exc:
        raise InvalidArgumentError(f"{path}: not valid YAML ({yaml_location(exc)})") from None
    documents = document if isinstance(document, list) else [document]
    if not documents or document is None:
        raise InvalidArgumentError(f"{path}: empty rollout file")
    many = len(documents) > 1
    return [_parse_item(item, f"{path}[{i}]" if many else str(path), name) for i, item in enumerate(documents)]


def _parse_item(item: Any, source: str, name: str | None) -> RolloutConfig:
    if isinstance(item, dict) and name is not None:
        if item.get("name", name) != name:
            raise InvalidArgumentError(f"{source}: name: {item['name']!r} differs from --name {name!r}")
        item = {**item, "name": name}
    return parse_rollout(item, source)
