"""Policy: hardware probe, candidate plans, measurement and selection against a contract."""

from mcp2026ai.policy.plan import DEFAULT_PLAN, Plan, Provider

__all__ = ["DEFAULT_PLAN", "Plan", "Provider"]
