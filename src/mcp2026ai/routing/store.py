"""Rollouts and routing decisions persisted in the registry catalog's annotations.

Kinds written here (all model-level rows use the version ``"*"``):

- ``rollout``: ``{"config": RolloutConfig | null, "reason": str}``; the latest row wins, a null
  config means cleared.
- ``policy_decision``: ``{"time", "trigger", "chosen", "reason", "candidates", ...}``, the trace the
  policy orchestrator also writes; rollbacks use trigger ``"rollback"`` and the canary's version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.registry.versioning import SemVer
from mcp2026ai.routing.config import RolloutConfig

ROLLOUT_KIND = "rollout"
POLICY_DECISION_KIND = "policy_decision"
MODEL_LEVEL = "*"


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RolloutChange:
    at: datetime
    config: RolloutConfig | None
    reason: str


class RolloutStore:
    """Read, validate and write rollouts for the models of one registry."""

    def __init__(self, registry: ModelRegistry, wallclock: Callable[[], datetime] = utc_now) -> None:
        self.registry = registry
        self.catalog = registry.catalog
        self._wallclock = wallclock

    def get(self, name: str) -> RolloutConfig | None:
        history = self.history(name)
        return history[-1].config if history else None

    def history(self, name: str) -> list[RolloutChange]:
        rows = self.catalog.annotations(name, ROLLOUT_KIND, MODEL_LEVEL)
        return [_change(at, payload) for _, at, payload in rows]

    def put(self, config: RolloutConfig, reason: str = "set", *, validate: bool = True) -> RolloutConfig:
        """Validate against the registry, pin the stable version, persist; returns what was stored.

        ``validate=False`` writes as is (a rollback must land even if the registry changed meanwhile).
        """
        if validate:
            config = self.validate(config)
        self._write(config.name, config.model_dump(mode="json"), reason)
        return config

    def clear(self, name: str, reason: str = "cleared") -> None:
        self.registry.versions(name)  # NotFoundError for an unknown model
        self._write(name, None, reason)

    def validate(self, config: RolloutConfig) -> RolloutConfig:
        records = {record.version: record for record in self.registry.versions(config.name)}
        for field in ("stable", "canary", "shadow"):
            version = getattr(config, field)
            if version is not None:
                _check_version(field, config.name, version, records)
        if config.fallback_model is not None:
            try:
                self.registry.versions(config.fallback_model)
            except NotFoundError:
                raise NotFoundError(f"fallback_model: unknown model {config.fallback_model!r}") from None
        if config.stable is None:
            config = config.model_copy(update={"stable": _default_stable(config, records)})
        return RolloutConfig.model_validate(config.model_dump())

    def record_decision(self, name: str, version: str, trigger: str, chosen: str, reason: str, **extra: Any) -> None:
        """Append a ``policy_decision`` row (the policy trace's kind and payload keys)."""
        at = self._wallclock()
        payload = {"time": at.isoformat(), "trigger": trigger, "chosen": chosen, "reason": reason, "candidates": []}
        self.catalog.annotate(name, version, POLICY_DECISION_KIND, {**payload, **extra}, at)

    def decisions(self, name: str, trigger: str | None = None) -> list[dict[str, Any]]:
        rows = self.catalog.annotations(name, POLICY_DECISION_KIND)
        payloads = [{"version": version, **payload} for version, _, payload in rows]
        return [row for row in payloads if trigger is None or row.get("trigger") == trigger]

    def _write(self, name: str, config: dict[str, Any] | None, reason: str) -> None:
        self.catalog.annotate(name, MODEL_LEVEL, ROLLOUT_KIND, {"config": config, "reason": reason}, self._wallclock())


def _change(at: datetime, payload: dict[str, Any]) -> RolloutChange:
    document = payload.get("config")
    config = RolloutConfig.model_validate(document) if document else None
    return RolloutChange(at=at, config=config, reason=str(payload.get("reason", "")))


def _check_version(field: str, name: str, version: str, records: dict[str, ModelVersion]) -> None:
    record = records.get(version)
    if record is None:
        raise NotFoundError(f"{field}: model {name!r} has no version {version}")
    if record.stage is Stage.ARCHIVED:
        raise InvalidArgumentError(f"{field}: {name}:{version} is archived")


def _default_stable(config: RolloutConfig, records: dict[str, ModelVersion]) -> str:
    """Highest production version, else highest dev/staging one, never the canary or the shadow."""
    taken = {config.canary, config.shadow}
    for stages in ({Stage.PRODUCTION}, {Stage.DEV, Stage.STAGING}):
        candidates = [v for v, record in records.items() if record.stage in stages and v not in taken]
        if candidates:
            return str(max(candidates, key=SemVer.parse))
    raise InvalidArgumentError(f"stable: model {config.name!r} has no other version to serve as stable")
