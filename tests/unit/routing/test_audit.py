"""The data plane records management actions in the audit log: loads, unloads, automatic rollbacks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.dataplane import ROLLBACK_ACTOR, DataPlane
from mcp2026ai.errors import NotFoundError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing import AnalysisSpec, Outcome, RolloutConfig
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.security import AuditLog
from mcp2026ai.serving.executors import direct_executor
from mcp2026ai.serving.models import ServedModels
from tests.support.clock import FakeClock


def _plane(registry: ModelRegistry, clock: FakeClock, audit: AuditLog) -> DataPlane:
    repository = ServedModels(registry, executor_factory=direct_executor)
    return DataPlane(repository, ["clf"], TrafficController(registry, clock), audit=audit)


def test_loads_and_unloads_are_recorded_with_the_caller(
    registry: ModelRegistry, clock: FakeClock, tmp_path: Path
) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    plane = _plane(registry, clock, audit)

    async def manage() -> None:
        await plane.repository.load("clf", "token:ops", {"protocol": "http"})
        await plane.repository.unload("clf", "token:ops", {"protocol": "grpc"})
        with pytest.raises(NotFoundError, match="not loaded"):
            await plane.repository.unload("clf", "token:ops")

    asyncio.run(manage())
    rows = [(e["action"], e["actor"], e["target"], e["details"]["result"]) for e in audit.entries()]
    assert rows == [
        ("model.load", "token:ops", "clf:1.0.0", "ok"),
        ("model.unload", "token:ops", "clf", "ok"),
        ("model.unload", "token:ops", "clf", "failed"),
    ]
    assert audit.entries()[0]["details"]["digest"] == registry.resolve("clf").digest
    assert audit.verify().ok


def test_an_automatic_rollback_is_recorded(registry: ModelRegistry, clock: FakeClock, tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    plane = _plane(registry, clock, audit)
    asyncio.run(plane.models.load("clf"))
    manager = plane.traffic.manager
    manager.set(RolloutConfig(name="clf", canary="1.1.0", weight=20, analysis=AnalysisSpec(interval_s=10)))
    for _ in range(50):
        manager.observe("clf", "1.1.0", Outcome.SERVER_ERROR, 5.0)
    plane.repository.tick()
    assert audit.entries() == []  # the interval is not over yet
    clock.advance(10)
    plane.repository.tick()
    [entry] = audit.entries()
    assert (entry["action"], entry["actor"], entry["target"]) == ("rollout.rollback", ROLLBACK_ACTOR, "clf:1.1.0")
    assert "5xx rate" in entry["details"]["reason"]
