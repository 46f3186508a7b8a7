"""The Rollouts page: each served model's rollout (stable, canary and weight, shadow), the canary's
analysis window, its rollbacks, the shadow diffs and the circuit breakers; and the three actions a
``manage`` token may take on a canary, each written to the audit log like the CLI's changes.

- promote: the canary becomes the stable version (all unpinned traffic), the rollout keeps its
  shadow and settings;
- rollback: back to the stable version only (what a failed canary analysis does);
- abort: the rollout is cleared, every request goes to the model's default version.
"""

from __future__ import annotations

from typing import Any

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.routing.breaker import BreakerState
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.manager import ROLLBACK_TRIGGER
from mcp2026ai.routing.report import shadow_report

ACTIONS = ("promote", "rollback", "abort")


def rollout_rows(plane: DataPlane) -> list[dict[str, Any]]:
    """One entry per served model that has a rollout, from what the traffic controller holds in
    memory (on the event loop: the serving sync keeps served models' rollouts cached)."""
    rows = []
    for name in sorted(plane.models.loaded_names()):
        config = plane.traffic.rollout(name)
        if config is not None:
            analyzer = plane.traffic.manager.analyzer(name)
            window = analyzer.current() if analyzer else None
            rows.append({"name": name, "config": config, "window": window, "breakers": _breakers(plane, name)})
    return rows


def with_history(plane: DataPlane, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their last rollbacks and the shadow diffs (catalog reads: call off the loop)."""
    store = plane.traffic.manager.store
    return [
        {
            **row,
            "rollbacks": list(reversed(store.decisions(row["name"], ROLLBACK_TRIGGER)))[:5],
            "shadow": shadow_report(store.catalog, row["name"]),
        }
        for row in rows
    ]


def _breakers(plane: DataPlane, name: str) -> list[dict[str, str]]:
    states = plane.traffic.breakers.states()
    return [
        {"version": version, "state": _state_name(state)}
        for (model, version), state in sorted(states.items())
        if model == name
    ]


def _state_name(state: BreakerState) -> str:
    return state.name.lower().replace("_", "-")


def apply_action(plane: DataPlane, name: str, action: str, actor: str, details: dict[str, str]) -> RolloutConfig | None:
    """Store what ``action`` makes of the model's rollout and record it in the audit log (blocking
    I/O: call off the loop, then :meth:`RolloutManager.adopt` the result on it). Returns the new
    rollout (None: cleared)."""
    if action not in ACTIONS:
        raise NotFoundError(f"unknown rollout action {action!r} (known: {', '.join(ACTIONS)})")
    store = plane.traffic.manager.store
    config = store.get(name)
    if config is None:
        raise NotFoundError(f"model {name!r} has no rollout")
    if config.canary is None and action != "abort":
        raise InvalidArgumentError(f"model {name!r} has no canary to {action}")
    target = f"{name}:{config.canary}" if config.canary else name
    updated = _changed(config, action)
    reason = f"{action} by {actor} from the console"
    if updated is None:
        store.clear(name, reason)
    else:
        updated = store.put(updated, reason)
    if plane.repository.audit is not None:
        plane.repository.audit.record(f"rollout.{action}", actor, target, {**details, "result": "ok", "via": "console"})
    return updated


def _changed(config: RolloutConfig, action: str) -> RolloutConfig | None:
    if action == "abort":
        return None
    if action == "rollback":
        return config.stable_only()
    stable_only = config.stable_only()
    return stable_only.model_copy(update={"stable": config.canary})
