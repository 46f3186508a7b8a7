"""The console's pure parts: which scope each /ui path needs, the Live snapshot's sums and buckets,
the rollout actions' new configurations, the audit filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mcp2026ai.ir.signature import TensorSpec
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.security import AuditLog, Scope
from mcp2026ai.server.http.auth import required_scope
from mcp2026ai.server.http.ui.audit_view import audit_view
from mcp2026ai.server.http.ui.live import live_snapshot
from mcp2026ai.server.http.ui.playground_view import example_request
from mcp2026ai.server.http.ui.rollouts_view import _changed


@pytest.mark.parametrize(
    ("path", "method", "scope"),
    [
        ("/ui", "GET", None),
        ("/ui/models", "GET", None),
        ("/ui/models/ocr-cls", "GET", None),
        ("/ui/static/vendor/htmx.min.js", "GET", None),
        ("/ui/fragments/models", "GET", Scope.INFER),
        ("/ui/api/live", "GET", Scope.INFER),
        ("/ui/fragments/rollouts", "GET", Scope.INFER),
        ("/ui/fragments/rollouts/mlp/promote", "POST", Scope.MANAGE),
        ("/ui/fragments/audit", "GET", Scope.MANAGE),
        ("/uiother", "GET", Scope.INFER),  # not the console: an unknown path
    ],
)
def test_console_paths_need_their_scope(path: str, method: str, scope: Scope | None) -> None:
    assert required_scope(path, method) == scope


def test_live_snapshot_sums_per_class_and_keeps_cumulative_buckets() -> None:
    registry = CollectorRegistry()
    requests = Counter("mcp_requests", "", ["model", "sla_class", "code"], registry=registry)
    requests.labels("a", "latency-critical", "200").inc(5)
    requests.labels("b", "latency-critical", "503").inc(2)
    requests.labels("a", "best-effort", "429").inc(1)
    labels = ["model", "sla_class"]
    duration = Histogram("mcp_request_duration_seconds", "", labels, buckets=(0.01, 0.1), registry=registry)
    for model, seconds in (("a", 0.005), ("b", 0.05), ("b", 0.5)):
        duration.labels(model, "latency-critical").observe(seconds)
    Gauge("mcp_scheduler_queue_depth", "", ["model", "sla_class"], registry=registry).labels("a", "best-effort").set(3)

    snapshot = live_snapshot(registry.collect())

    assert snapshot["requests"] == {"latency-critical": 7.0, "best-effort": 1.0}
    assert snapshot["refusals"] == {"latency-critical": 2.0, "best-effort": 1.0}
    latency = snapshot["mcp_request_duration_seconds"]["latency-critical"]
    assert latency["le"] == [0.01, 0.1, None] and latency["counts"] == [1.0, 2.0, 3.0]
    assert latency["sum"] == pytest.approx(0.555)
    assert snapshot["mcp_scheduler_queue_depth"] == {"best-effort": 3.0}


def test_rollout_actions_change_the_configuration_as_documented() -> None:
    config = RolloutConfig(name="m", stable="1.0.0", canary="1.1.0", weight=20, shadow="1.2.0", shadow_percent=5)
    promoted = _changed(config, "promote")
    assert promoted is not None
    assert (promoted.stable, promoted.canary, promoted.weight, promoted.shadow) == ("1.1.0", None, 0, "1.2.0")
    rolled_back = _changed(config, "rollback")
    assert rolled_back is not None and (rolled_back.stable, rolled_back.canary) == ("1.0.0", None)
    assert _changed(config, "abort") is None


def test_audit_view_filters_by_actor_and_action_and_verifies_the_chain(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.record("model.load", "token:ops", "m:1.0.0", {"result": "ok"})
    log.record("rollout.promote", "token:admin", "m:1.1.0", {"via": "console"})
    log.record("rollout.abort", "token:ops", "m", {})

    view = audit_view(log, actor="ops", action="rollout")

    assert view.report.ok and view.report.entries == 3
    assert [(row["action"], row["target"]) for row in view.entries] == [("rollout.abort", "m")]
    assert view.actors == ["token:admin", "token:ops"]


def test_audit_view_reports_a_broken_chain(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.record("model.load", "token:ops", "m:1.0.0")
    log.record("model.unload", "token:ops", "m")
    lines = log.path.read_text().splitlines()
    log.path.write_text(lines[0].replace("token:ops", "token:eve") + "\n" + lines[1] + "\n")

    view = audit_view(log)

    assert not view.report.ok and "line 1" in view.report.reason


def test_example_request_is_one_row_of_zeros_per_input() -> None:
    specs = [TensorSpec(name="x", datatype="FP32", shape=[-1, 3]), TensorSpec(name="s", datatype="BYTES", shape=[-1])]
    assert example_request(specs) == {
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [0, 0, 0]},
            {"name": "s", "datatype": "BYTES", "shape": [1], "data": ["text"]},
        ]
    }
