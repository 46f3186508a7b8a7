"""``mcp --server URL --token T ...``: the management commands against a running server's management
API (client/management.py) instead of the local stores, returning what the local use case
(dataplane/management.py) returns, so that every command prints the same either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp2026ai.client import Management as ManagementClient
from mcp2026ai.dataplane import plans
from mcp2026ai.dataplane.management import Registration
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.policy.records import Decision
from mcp2026ai.registry import ModelVersion, Stage
from mcp2026ai.routing.config import RolloutConfig


class RemoteManagement:
    """The local :class:`~mcp2026ai.dataplane.management.Management`'s methods, over HTTP."""

    def __init__(self, client: ManagementClient) -> None:
        self.client = client

    def register(
        self, name: str, path: Path | str, asked: Registration, audit_details: dict[str, Any] | None = None
    ) -> ModelVersion:
        return self.client.register(
            name, path, version=asked.version, stage=asked.stage, tags=asked.tags, contract=asked.contract
        )

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        return self.client.versions(name)

    def show(self, name: str, version: str | None = None) -> dict[str, Any]:
        return self.client.show(name, version)

    def promote(self, name: str, version: str, stage: Stage) -> ModelVersion:
        return self.client.promote(name, version, stage)

    def archive(self, name: str, version: str) -> ModelVersion:
        return self.client.archive(name, version)

    def signature(self, name: str, version: str | None = None) -> dict[str, Any]:
        return self.client.signature(name, version)

    def rollout(self, name: str) -> dict[str, Any]:
        return self.client.rollout(name)

    def set_rollout(self, name: str, changes: dict[str, Any], interval_s: float | None = None) -> RolloutConfig:
        return RolloutConfig.model_validate(self.client.set_rollout(name, changes, interval_s))

    def put_rollouts(self, configs: list[RolloutConfig], source: str) -> list[RolloutConfig]:
        raise InvalidArgumentError("--file: not available with --server; give the changes as options")

    def clear_rollout(self, name: str) -> None:
        self.client.clear_rollout(name)

    def audit_entries(self, last: int = 20) -> list[dict[str, Any]]:
        return self.client.audit_entries(last)

    def explanation(self, name: str, version: str | None = None) -> plans.PlanExplanation:
        return plans.explanation_from(self.client.plan_explain(name, version))

    def trace(self, name: str, last: str | None, version: str | None) -> list[Decision]:
        return [Decision.model_validate(item) for item in self.client.plan_trace(name, last, version)]
