"""docs/prometheus-alerts.yml and docs/grafana-dashboard.json parse, and use only declared metrics."""

from __future__ import annotations

import json
from typing import Any

import promql_parser as promql
import pytest
import yaml

from mcp2026ai.observability.metrics import REGISTRY
from tests.support import REPO_ROOT

ALERTS = REPO_ROOT / "docs" / "prometheus-alerts.yml"
DASHBOARD = REPO_ROOT / "docs" / "grafana-dashboard.json"
_SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created")}
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$model": ".*"}


def exposed_names() -> set[str]:
    """Every series name REGISTRY can expose (counters get _total, histograms _bucket/_sum/_count)."""
    names = set()
    for family in REGISTRY.collect():
        names |= {family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",))}
    return names


def parse(expr: str) -> Any:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return promql.parse(expr)


def selectors(expr: str) -> set[str]:
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql.VectorSelector):
            names.add(node.name)

    promql.walk(parse(expr), visit)
    return names


def comparisons(expr: str) -> set[tuple[str, float]]:
    """(operator, number) of every comparison against a literal in the expression."""
    found: set[tuple[str, float]] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql.BinaryExpr) and isinstance(node.rhs, promql.NumberLiteral):
            found.add((str(node.op), float(node.rhs.val)))

    promql.walk(parse(expr), visit)
    return found


@pytest.fixture(scope="module")
def rules() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return {rule["alert"]: rule for group in document["groups"] for rule in group["rules"]}


def test_every_alert_expression_parses_and_uses_declared_metrics(rules: dict[str, dict[str, Any]]) -> None:
    known = exposed_names()
    for name, rule in rules.items():
        used = selectors(rule["expr"])
        assert used, name
        assert used <= known, f"{name} uses undeclared {sorted(used - known)}"
        assert rule["annotations"]["summary"] and rule["labels"]["severity"]


@pytest.mark.parametrize(
    ("alert", "metric", "threshold"),
    [
        ("MCPLatencyP95High", "mcp_request_duration_seconds_bucket", (">", 0.12)),
        ("MCPBatchFillLow", "mcp_scheduler_batch_fill_ratio_sum", ("<", 0.4)),
        ("MCPCircuitOpen", "mcp_circuit_state", ("==", 2.0)),
        ("MCPCanaryRolledBack", "mcp_canary_rollbacks_total", (">", 0.0)),
    ],
)
def test_the_four_alerts_and_their_thresholds(
    rules: dict[str, dict[str, Any]], alert: str, metric: str, threshold: tuple[str, float]
) -> None:
    expr = rules[alert]["expr"]
    assert metric in selectors(expr)
    assert threshold in comparisons(expr)


def test_p95_alert_is_a_95th_percentile(rules: dict[str, dict[str, Any]]) -> None:
    call = parse(rules["MCPLatencyP95High"]["expr"]).lhs
    assert isinstance(call, promql.Call) and call.func.name == "histogram_quantile"
    assert float(call.args[0].val) == 0.95


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _targets(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    return [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]


def test_dashboard_panels_use_only_declared_metrics(dashboard: dict[str, Any]) -> None:
    known = exposed_names()
    targets = _targets(dashboard)
    assert len(targets) >= 20
    for title, expr in targets:
        used = selectors(expr)
        assert used and used <= known, f"panel {title!r}: {sorted(used - known)}"


def test_dashboard_shows_every_mcp_family_and_process_cpu_memory(dashboard: dict[str, Any]) -> None:
    used = {name for _, expr in _targets(dashboard) for name in selectors(expr)}
    for family in REGISTRY.collect():
        if family.name.startswith("mcp_"):
            names = {family.name + suffix for suffix in _SUFFIXES.get(family.type, ("",))}
            assert used & names, f"no panel shows {family.name}"
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes"} <= used


def test_dashboard_layout_is_grafana_shaped(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0
    variables = {variable["name"] for variable in dashboard["templating"]["list"]}
    assert {"DS_PROMETHEUS", "model"} <= variables
