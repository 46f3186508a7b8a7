"""Every Prometheus metric of mcp2026ai: names, labels and buckets in one place.

All metrics live in the dedicated :data:`REGISTRY` (not prometheus_client's global one), so an
exposition endpoint serves exactly these and tests read them without cross-talk. Labels ``model``
and ``version`` name the served model version.

Scheduler (dynamic batcher):

- ``mcp_scheduler_queue_depth`` (gauge; model, version, sla_class): requests waiting in a class queue.
- ``mcp_scheduler_queue_wait_seconds`` (histogram; model, version, sla_class): time from accept to
  dispatch in a batch.
- ``mcp_scheduler_rejections_total`` (counter; model, version, sla_class, reason): requests refused,
  ``reason`` is ``overloaded`` (class queue full), ``deadline`` (deadline passed before it ran) or
  ``shutdown`` (still queued when the drain timed out).
- ``mcp_scheduler_batch_rows`` (histogram; model, version): rows in each dispatched batch.
- ``mcp_scheduler_batch_fill_ratio`` (histogram; model, version): batch rows / max_batch_size.
- ``mcp_scheduler_queue_delay_seconds`` (gauge; model, version): current batching window (adaptive).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

MODEL_LABELS = ("model", "version")
CLASS_LABELS = (*MODEL_LABELS, "sla_class")

BATCH_ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
FILL_RATIO_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
QUEUE_WAIT_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

SCHEDULER_QUEUE_DEPTH = Gauge(
    "mcp_scheduler_queue_depth",
    "Requests waiting in an SLA-class queue.",
    CLASS_LABELS,
    registry=REGISTRY,
)
SCHEDULER_QUEUE_WAIT = Histogram(
    "mcp_scheduler_queue_wait_seconds",
    "Seconds from accepting a request to dispatching it in a batch.",
    CLASS_LABELS,
    buckets=QUEUE_WAIT_BUCKETS,
    registry=REGISTRY,
)
SCHEDULER_REJECTIONS = Counter(
    "mcp_scheduler_rejections_total",
    "Requests the scheduler refused (reason: overloaded, deadline, shutdown).",
    (*CLASS_LABELS, "reason"),
    registry=REGISTRY,
)
SCHEDULER_BATCH_ROWS = Histogram(
    "mcp_scheduler_batch_rows",
    "Rows (not requests) in each dispatched batch.",
    MODEL_LABELS,
    buckets=BATCH_ROW_BUCKETS,
    registry=REGISTRY,
)
SCHEDULER_BATCH_FILL = Histogram(
    "mcp_scheduler_batch_fill_ratio",
    "Batch rows divided by max_batch_size.",
    MODEL_LABELS,
    buckets=FILL_RATIO_BUCKETS,
    registry=REGISTRY,
)
SCHEDULER_QUEUE_DELAY = Gauge(
    "mcp_scheduler_queue_delay_seconds",
    "Current batching window: how long a batch may wait to fill.",
    MODEL_LABELS,
    registry=REGISTRY,
)
