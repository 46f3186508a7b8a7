"""Each registered version's lifecycle as the console's models page shows it: its state (loaded,
loading, unloaded, evicted by the memory budget) and its part in the traffic (default, the rollout's
stable, canary with its weight, shadow with its share, a fallback model).

Reads the served tables (cheap) and the model's rollout (a catalog read the first time): the routes
call it on a worker thread, as the rest of the models page.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import MCPError
from mcp2026ai.registry import ModelVersion


@dataclass(frozen=True)
class VersionState:
    state: str
    """``loaded``, ``loading``, ``unloaded`` or ``evicted``."""
    traffic: str
    """What of the traffic it takes: ``default``, ``stable``, ``canary 20%``, ``shadow 10%``; "" for none."""
    reason: str = ""


def version_state(plane: DataPlane, record: ModelVersion) -> VersionState:
    state, reason = _state(plane, record)
    return VersionState(state, _traffic(plane, record), reason)


def _loaded_versions(plane: DataPlane, name: str) -> set[str]:
    tensors = {served.record.version for served in plane.models.served_versions(name)}
    return tensors | {served.record.version for served in plane.llms.served_versions(name)}


def _state(plane: DataPlane, record: ModelVersion) -> tuple[str, str]:
    name = record.name
    if record.version in _loaded_versions(plane, name):
        return "loaded", ""
    if (plane.models.loading(name) or plane.llms.loading(name)) and _registry_default(plane, name) == record.version:
        return "loading", "loaded on request"
    evicted = plane.llms.eviction_reason(name)
    if evicted and not _loaded_versions(plane, name):
        return "evicted", evicted
    return "unloaded", ""


def _registry_default(plane: DataPlane, name: str) -> str | None:
    try:
        return plane.models.registry.resolve(name).version
    except MCPError:
        return None


def _traffic(plane: DataPlane, record: ModelVersion) -> str:
    name, version = record.name, record.version
    parts = []
    if version in _loaded_versions(plane, name):
        default = plane.llms.default_version(name) or plane.models.default_version(name)
        parts += ["default"] if default == version else []
    config = plane.traffic.rollout(name)
    if config is not None:
        if config.stable == version and config.canary_active:
            parts.append("stable")
        if config.canary == version:
            parts.append(f"canary {config.weight}%")
        if config.shadow == version:
            parts.append(f"shadow {config.shadow_percent:g}%")
    return ", ".join(parts)
