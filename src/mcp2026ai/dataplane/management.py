"""The registry's management actions as one use case, shared by the CLI (local stores) and the HTTP
management API (server/http/manage.py), so that both do and audit exactly the same thing.

Each action is recorded in the audit log under ``actor`` (``cli:<user>`` on the CLI, ``token:<name>``
over HTTP) with the action name, target and details the CLI has always written. Answers are
registry records or the JSON documents the CLI's ``--json`` prints: what the client SDK
(client/management.py) returns too. Every method does blocking I/O: the server calls them off its loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp2026ai.contract import InferenceContract
from mcp2026ai.dataplane import plans
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.policy.records import Decision
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.signing import verify_artifact
from mcp2026ai.routing.config import RolloutConfig, parse_rollout
from mcp2026ai.routing.manager import ROLLBACK_TRIGGER
from mcp2026ai.routing.store import RolloutStore
from mcp2026ai.security import TrustedKeys
from mcp2026ai.security.audit import AuditChain

ROLLOUT_FIELDS = frozenset({"stable", "canary", "weight", "shadow", "shadow_percent", "fallback_model"})


@dataclass(frozen=True)
class Registration:
    """What a registration asks for besides the file (``mcp model register``'s options)."""

    version: str | None = None
    stage: Stage = Stage.DEV
    tags: dict[str, str] | None = None
    contract: InferenceContract | None = None


class Management:
    def __init__(
        self, registry: ModelRegistry, audit: AuditChain | None, actor: str, trusted: TrustedKeys | None = None
    ) -> None:
        self.registry = registry
        self.audit_log = audit
        self.actor = actor
        self.trusted = trusted

    def _audit(self, action: str, target: str, details: dict[str, Any]) -> None:
        if self.audit_log is not None:
            self.audit_log.record(action, self.actor, target, details)

    # models ----------------------------------------------------------------------------------
    def register(
        self, name: str, path: Path | str, asked: Registration, audit_details: dict[str, Any] | None = None
    ) -> ModelVersion:
        """Import the file at ``path`` as a new version of ``name`` (``model.register`` is audited by
        the registry). A URL is refused here: the CLI and the server each download it first."""
        if isinstance(path, str):
            raise InvalidArgumentError(f"{path}: download it first (register takes a local file)")
        return self.registry.register(
            name,
            path,
            contract=asked.contract,
            version=asked.version,
            stage=asked.stage,
            tags=dict(asked.tags or {}),
            actor=self.actor,
            audit_details=audit_details,
        )

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        return self.registry.versions(name)

    def show(self, name: str, version: str | None = None) -> dict[str, Any]:
        """``mcp model show --json``: the record, and a language model's description under ``llm``."""
        record = self.registry.resolve(name, version)
        document = record.model_dump(mode="json")
        if is_llm_format(record.format):
            document["llm"] = self.registry.llm_info(record).model_dump(mode="json")
        return document

    def promote(self, name: str, version: str, stage: Stage) -> ModelVersion:
        record = self.registry.promote(name, version, stage)
        self._audit("model.promote", record.ref, {"stage": record.stage.value})
        return record

    def archive(self, name: str, version: str) -> ModelVersion:
        """Promote to ``archived``: kept, never the default version again."""
        return self.promote(name, version, Stage.ARCHIVED)

    def signature(self, name: str, version: str | None = None) -> dict[str, Any]:
        """``mcp model verify``: re-hash the artifact and check a trusted signature (SignatureError if not)."""
        record = self.registry.resolve(name, version)
        signature = verify_artifact(self.registry, record, self.trusted or TrustedKeys())
        return {"model": record.ref, "signer": signature.signer, "key_id": signature.key_id, "digest": record.digest}

    # rollouts --------------------------------------------------------------------------------
    def _rollouts(self) -> RolloutStore:
        return RolloutStore(self.registry)

    def rollout(self, name: str) -> dict[str, Any]:
        """``mcp rollout show --json``."""
        store = self._rollouts()
        self.registry.versions(name)
        config = store.get(name)
        rollbacks = store.decisions(name, ROLLBACK_TRIGGER)
        return {"name": name, "rollout": config.model_dump(mode="json") if config else None, "rollbacks": rollbacks}

    def set_rollout(self, name: str, changes: dict[str, Any], interval_s: float | None = None) -> RolloutConfig:
        """Change only the fields named (``mcp rollout set``); ``rollout.set`` is audited."""
        unknown = sorted(set(changes) - ROLLOUT_FIELDS)
        if unknown:
            raise InvalidArgumentError(f"rollout: unknown field(s) {', '.join(unknown)}")
        store = self._rollouts()
        current = store.get(name)
        document: dict[str, Any] = current.model_dump(mode="json") if current else {"name": name}
        document.update({key: value for key, value in changes.items() if value is not None})
        if interval_s is not None:
            document["analysis"] = {**document.get("analysis", {}), "interval_s": interval_s}
        config = store.put(parse_rollout(document, f"rollout of {name}"), "set")
        self._audit("rollout.set", name, {key: value for key, value in changes.items() if value is not None})
        return config

    def put_rollouts(self, configs: list[RolloutConfig], source: str) -> list[RolloutConfig]:
        """``mcp rollout set --file``: each whole rollout replaced."""
        stored = [self._rollouts().put(config, f"set from {source}") for config in configs]
        for config in stored:
            self._audit("rollout.set", config.name, {"file": source})
        return stored

    def clear_rollout(self, name: str) -> None:
        self._rollouts().clear(name)
        self._audit("rollout.clear", name, {})

    # plans -----------------------------------------------------------------------------------
    def explanation(self, name: str, version: str | None = None) -> plans.PlanExplanation:
        return plans.explanation(self.registry, name, version)

    def trace(self, name: str, last: str | None, version: str | None) -> list[Decision]:
        return plans.trace(self.registry, name, last, version)

    # audit -----------------------------------------------------------------------------------
    def audit_entries(self, last: int = 20) -> list[dict[str, Any]]:
        """The most recent ``last`` entries (0: all), oldest first."""
        if self.audit_log is None:
            return []
        entries = self.audit_log.entries()
        return entries[-last:] if last else entries
