"""Traffic management: version routing, canary analysis and rollback, shadow diffs, circuit breakers.

Transport-neutral; the data plane wires it in (see ``routing.manager`` for the request flow).
"""

from mcp2026ai.routing.breaker import BreakerBoard, BreakerState, CircuitBreaker, Target, pick_target
from mcp2026ai.routing.config import AnalysisSpec, BreakerSpec, RolloutConfig, load_rollouts, parse_rollout
from mcp2026ai.routing.diff import Observation, ShadowDiff, compare
from mcp2026ai.routing.manager import RolloutManager
from mcp2026ai.routing.outcome import Outcome, classify
from mcp2026ai.routing.report import ShadowKey, ShadowReporter, ShadowStats, shadow_report
from mcp2026ai.routing.rollout import CanaryAnalyzer, Verdict
from mcp2026ai.routing.router import RouteDecision, Router, RouteReason, bucket, count_route, user_key
from mcp2026ai.routing.shadow import ShadowMirror
from mcp2026ai.routing.store import RolloutStore

__all__ = [
    "AnalysisSpec",
    "BreakerBoard",
    "BreakerSpec",
    "BreakerState",
    "CanaryAnalyzer",
    "CircuitBreaker",
    "Observation",
    "Outcome",
    "RolloutConfig",
    "RolloutManager",
    "RolloutStore",
    "RouteDecision",
    "RouteReason",
    "Router",
    "ShadowDiff",
    "ShadowKey",
    "ShadowMirror",
    "ShadowReporter",
    "ShadowStats",
    "Target",
    "Verdict",
    "bucket",
    "classify",
    "compare",
    "count_route",
    "load_rollouts",
    "parse_rollout",
    "pick_target",
    "shadow_report",
    "user_key",
]
