"""Every Prometheus metric of mcp2026ai, declared in one place.

All series live in :data:`REGISTRY` (served at ``/metrics``). Names:

- ``mcp_requests_total{model,version,protocol,code}``: finished requests by status code.
- ``mcp_request_duration_seconds{model,version,protocol}``: end-to-end latency histogram.
- ``mcp_requests_in_flight{protocol}``: requests being handled now.
- ``mcp_model_load_seconds{model,version}``: time the last load of a version took.
- ``mcp_models_loaded``: number of model versions loaded.
- ``process_*`` / ``python_*``: CPU, memory, file descriptors, GC of the server process.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

LATENCY_BUCKETS = (
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8, 1.0, 2.0, 5.0, 10.0,
)
UNKNOWN_MODEL = "_unknown"

REQUESTS = Counter(
    "mcp_requests", "Finished inference requests by status code.",
    ["model", "version", "protocol", "code"], registry=REGISTRY,
)
REQUEST_DURATION = Histogram(
    "mcp_request_duration_seconds", "End-to-end inference latency in the server.",
    ["model", "version", "protocol"], buckets=LATENCY_BUCKETS, registry=REGISTRY,
)
IN_FLIGHT = Gauge("mcp_requests_in_flight", "Inference requests being handled.", ["protocol"], registry=REGISTRY)
MODEL_LOAD_SECONDS = Gauge(
    "mcp_model_load_seconds", "Seconds the last load of a model version took.", ["model", "version"],
    registry=REGISTRY,
)
MODELS_LOADED = Gauge("mcp_models_loaded", "Model versions loaded and serving.", registry=REGISTRY)


def observe_request(model: str, version: str, protocol: str, code: str, seconds: float) -> None:
    REQUESTS.labels(model, version, protocol, code).inc()
    REQUEST_DURATION.labels(model, version, protocol).observe(seconds)
