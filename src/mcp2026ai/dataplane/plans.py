"""What ``mcp policy explain`` and ``mcp policy trace`` show of a tensor model's plans, gathered in one
place for the CLI (local stores) and the management API (server/http/manage.py), and carried over
HTTP as JSON: :func:`explanation_document` there, :func:`explanation_from` back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.records import Decision, StoredPlan
from mcp2026ai.policy.trace import parse_duration
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format


@dataclass(frozen=True)
class PlanExplanation:
    record: ModelVersion
    stored: StoredPlan | None
    contract: InferenceContract
    decisions: list[Decision]


def explanation(registry: ModelRegistry, name: str, version: str | None = None) -> PlanExplanation:
    record = registry.resolve(name, version)
    _tensor_model(record)
    orchestrator = PolicyOrchestrator(registry)
    decisions = orchestrator.decisions(record.name, version=record.version)
    return PlanExplanation(record, orchestrator.stored(record), orchestrator.contract_for(record), decisions)


def trace(registry: ModelRegistry, name: str, last: str | None, version: str | None) -> list[Decision]:
    """The planning decisions of ``name`` (``last``: only this recent, 30s, 5m, 1h, 2d)."""
    since = datetime.now(UTC) - parse_duration(last) if last else None
    registry.versions(name)  # NotFoundError for an unknown model
    _tensor_model(registry.resolve(name))
    return PolicyOrchestrator(registry).decisions(name, since=since, version=version)


def _tensor_model(record: ModelVersion) -> None:
    if is_llm_format(record.format):
        raise InvalidArgumentError(
            f"{record.ref} is a language model: its generation plans are shown by `mcp policy explain|trace` "
            "run where the registry's stores are, not over --server"
        )


def explanation_document(explained: PlanExplanation) -> dict[str, Any]:
    return {
        "record": explained.record.model_dump(mode="json"),
        "stored": explained.stored.model_dump(mode="json") if explained.stored else None,
        "contract": explained.contract.model_dump(mode="json"),
        "decisions": [decision.model_dump(mode="json") for decision in explained.decisions],
    }


def explanation_from(document: dict[str, Any]) -> PlanExplanation:
    stored = document.get("stored")
    return PlanExplanation(
        ModelVersion.model_validate(document["record"]),
        StoredPlan.model_validate(stored) if stored is not None else None,
        InferenceContract.model_validate(document["contract"]),
        [Decision.model_validate(decision) for decision in document["decisions"]],
    )
