"""Policy: hardware probe, candidate plans, measurement and selection against a contract.

Names are loaded on first access: importing one policy module (the probe, say) does not import the
profiler and onnxruntime with it. ``Plan`` itself lives in :mod:`mcp2026ai.runtime.plan`.
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "NoFeasiblePlanError": "selection",
    "Evaluation": "selection",
    "select_plan": "selection",
    "OptimizedModelCache": "cache",
    "PolicyOrchestrator": "orchestrator",
    "ReplanMonitor": "replan",
    "ReplanPolicy": "replan",
    "SyntheticShapes": "synthetic",
    "DecisionLog": "trace",
    "parse_duration": "trace",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
