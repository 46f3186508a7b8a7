"""Policy: hardware probe, candidate plans, measurement and selection against a contract.

``Plan`` is imported eagerly (the runtime depends on it); everything else is loaded on first access,
because the orchestrator itself depends on the runtime.
"""

from __future__ import annotations

import importlib
from typing import Any

from mcp2026ai.policy.plan import DEFAULT_PLAN, Plan, Provider

_LAZY = {
    "Candidate": "candidates",
    "Variant": "candidates",
    "Decision": "records",
    "StoredPlan": "records",
    "Figures": "profiler",
    "Measurement": "profiler",
    "ProfileBudget": "profiler",
    "Profiler": "profiler",
    "HardwareProfile": "probe",
    "probe_hardware": "probe",
    "NoFeasiblePlanError": "orchestrator",
    "Evaluation": "orchestrator",
    "select_plan": "orchestrator",
    "OptimizedModelCache": "cache",
    "PolicyOrchestrator": "service",
    "ReplanMonitor": "replan",
    "ReplanPolicy": "replan",
    "SyntheticShapes": "synthetic",
    "DecisionLog": "trace",
    "parse_duration": "trace",
}

__all__ = ["DEFAULT_PLAN", "Plan", "Provider", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
