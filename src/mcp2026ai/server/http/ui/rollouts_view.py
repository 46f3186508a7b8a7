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
    """One entry per served model that has a rollout (blocking catalog reads: call off the loop)."""
    rows = []
    for name in sorted(plane.models.loaded_names()):
        config = plane.traffic.rollout(name)
        if config is not None:
            rows.append(rollout_row(plane, name, config))
    return rows


def rollout_row(plane: DataPlane, name: str, config: RolloutConfig) -> dict[str, Any]:
    analyzer = plane.traffic.manager.analyzer(name)
    store = plane.traffic.manager.store
    return {
        "name": name,
        "config": config,
        "window": analyzer.current() if analyzer else None,
        "rollbacks": list(reversed(store.decisions(name, ROLLBACK_TRIGGER)))[:5],
        "shadow": shadow_report(store.catalog, name),
        "breakers": _breakers(plane, name),
    }


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
    """Run ``action`` on the model's canary and record it in the audit log; returns the new rollout."""
    if action not in ACTIONS:
        raise NotFoundError(f"unknown rollout action {action!r} (known: {', '.join(ACTIONS)})")
    config = plane.traffic.rollout(name)
    if config is None:
        raise NotFoundError(f"model {name!r} has no rollout")
    if config.canary is None and action != "abort":
        raise InvalidArgumentError(f"model {name!r} has no canary to {action}")
    target = f"{name}:{config.canary}" if config.canary else name
    updated = _changed(config, action)
    reason = f"{action} by {actor} from the console"
    if updated is None:
        plane.traffic.manager.store.clear(name, reason)
        plane.traffic.manager.refresh(name)
    else:
        plane.traffic.manager.set(updated, reason)
    if plane.audit is not None:
        plane.audit.record(f"rollout.{action}", actor, target, {**details, "result": "ok", "via": "console"})
    return updated


def _changed(config: RolloutConfig, action: str) -> RolloutConfig | None:
    if action == "abort":
        return None
    if action == "rollback":
        return config.stable_only()
    stable_only = config.stable_only()
    return stable_only.model_copy(update={"stable": config.canary})
