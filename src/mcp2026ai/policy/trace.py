"""The decision trace: decisions and chosen plans kept as registry catalog annotations.

Kinds: ``policy_decision`` (a :class:`Decision`) and ``plan`` (a :class:`StoredPlan`), both under the
planned model version. ``mcp policy trace --last 5m`` reads them back through :func:`parse_duration`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.observability.metrics import POLICY_DECISIONS
from mcp2026ai.policy.records import Decision, StoredPlan
from mcp2026ai.registry.catalog import Catalog

KIND_DECISION = "policy_decision"
KIND_PLAN = "plan"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str, option: str = "--last") -> timedelta:
    """``30s``, ``5m``, ``1h``, ``2d`` or ``1w`` as a timedelta; errors name the value."""
    match = _DURATION.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise InvalidArgumentError(f"{option} {text!r}: expected a positive duration like 30s, 5m, 1h or 2d")
    return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()])


class DecisionLog:
    """Reads and writes policy decisions and stored plans in the catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def record(self, decision: Decision) -> None:
        payload = decision.model_dump(mode="json")
        self.catalog.annotate(decision.model, decision.version, KIND_DECISION, payload, decision.time)
        outcome = "chosen" if decision.chosen is not None else "infeasible"
        POLICY_DECISIONS.labels(decision.model, decision.trigger, outcome).inc()

    def decisions(self, name: str, since: datetime | None = None, version: str | None = None) -> list[Decision]:
        """Decisions for a model (optionally one version), oldest first, at or after ``since``."""
        rows = self.catalog.annotations(name, KIND_DECISION, version=version)
        decisions = [Decision.model_validate(payload) for _, _, payload in rows]
        if since is not None:
            decisions = [decision for decision in decisions if decision.time >= since]
        return decisions

    def last_decision(self, name: str, version: str) -> Decision | None:
        decisions = self.decisions(name, version=version)
        return decisions[-1] if decisions else None

    def store_plan(self, name: str, version: str, stored: StoredPlan) -> None:
        self.catalog.annotate(name, version, KIND_PLAN, stored.model_dump(mode="json"), stored.decided_at)

    def current_plan(self, name: str, version: str) -> StoredPlan | None:
        """The most recently stored plan of a version."""
        rows = self.catalog.annotations(name, KIND_PLAN, version=version)
        return StoredPlan.model_validate(rows[-1][2]) if rows else None
