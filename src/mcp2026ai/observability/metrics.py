"""Every Prometheus metric the product exports: names, labels and buckets in one place.

All metrics live in the module-level :data:`REGISTRY` (not the client library's global one), so
the server exposes exactly these and tests read them with ``REGISTRY.get_sample_value``.
Labels: ``model`` and ``version`` (the serving version) everywhere, plus a few named per metric.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry()

# --- routing: versions, canary, circuit breaker -------------------------------------------------

ROUTE_DECISIONS = Counter(
    "mcp_route_decisions_total",
    "Requests routed to a model version, by why that version was chosen.",
    ["model", "version", "reason"],
    registry=REGISTRY,
)
CIRCUIT_STATE = Gauge(
    "mcp_circuit_state",
    "Circuit breaker state per model version: 0 closed, 1 half-open, 2 open.",
    ["model", "version"],
    registry=REGISTRY,
)
CIRCUIT_TRANSITIONS = Counter(
    "mcp_circuit_transitions_total",
    "Circuit breaker state changes, by the state entered.",
    ["model", "version", "state"],
    registry=REGISTRY,
)
CIRCUIT_FALLBACKS = Counter(
    "mcp_circuit_fallbacks_total",
    "Requests sent elsewhere because the routed version's circuit was open.",
    ["model", "version", "target"],
    registry=REGISTRY,
)
CANARY_ANALYSIS = Gauge(
    "mcp_canary_analysis",
    "Figures of the latest canary analysis window (requests, server_error_rate, error_rate, p95_ms).",
    ["model", "version", "figure"],
    registry=REGISTRY,
)
CANARY_ROLLBACKS = Counter(
    "mcp_canary_rollbacks_total",
    "Canary versions rolled back to the stable version by the analysis.",
    ["model", "version"],
    registry=REGISTRY,
)

# --- routing: shadow traffic (labels: primary version and shadow version) -----------------------

_SHADOW_LABELS = ["model", "version", "shadow_version"]
_DIFF_BUCKETS = (1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.5, 1.0, 10.0, float("inf"))
_LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, float("inf"))

SHADOW_REQUESTS = Counter(
    "mcp_shadow_requests_total",
    "Mirrored requests by result: ok, error (shadow failed) or dropped (too many in flight).",
    [*_SHADOW_LABELS, "result"],
    registry=REGISTRY,
)
SHADOW_STATUS_MISMATCHES = Counter(
    "mcp_shadow_status_mismatches_total",
    "Mirrored requests whose shadow outcome differed from the primary's.",
    _SHADOW_LABELS,
    registry=REGISTRY,
)
SHADOW_MAX_ABS_DIFF = Histogram(
    "mcp_shadow_max_abs_diff",
    "Largest absolute element difference between primary and shadow outputs, per output tensor.",
    _SHADOW_LABELS,
    buckets=_DIFF_BUCKETS,
    registry=REGISTRY,
)
SHADOW_REL_L2 = Histogram(
    "mcp_shadow_rel_l2",
    "Relative L2 distance ||shadow - primary|| / ||primary|| per output tensor.",
    _SHADOW_LABELS,
    buckets=_DIFF_BUCKETS,
    registry=REGISTRY,
)
SHADOW_TOP1_ROWS = Counter(
    "mcp_shadow_top1_rows_total",
    "Rows of 2-D score outputs compared for top-1 agreement, by whether the argmax agreed.",
    [*_SHADOW_LABELS, "agreed"],
    registry=REGISTRY,
)
SHADOW_LATENCY_MS = Histogram(
    "mcp_shadow_latency_ms",
    "Latency of mirrored requests in milliseconds, primary and shadow side by side.",
    [*_SHADOW_LABELS, "role"],
    buckets=_LATENCY_BUCKETS_MS,
    registry=REGISTRY,
)
