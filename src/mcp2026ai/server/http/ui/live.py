"""The Live page's figures: one snapshot of the server's own Prometheus series, summed per SLA class
(or per language model), for the browser to turn into rates and quantiles between two polls.

No second metrics store: each poll reads the counters, gauges and histogram buckets that ``/metrics``
serves, from the same registry (every worker's under ``--workers N``), and forgets them. Cumulative
figures go out as they are (the page keeps the previous snapshot and takes differences), so the
server keeps no state per viewer.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from prometheus_client.metrics_core import Metric

from mcp2026ai.observability.metrics import server_registry

REFUSAL_CODES = frozenset({"429", "503"})
_HISTOGRAMS = {
    "mcp_request_duration_seconds": "sla_class",
    "mcp_scheduler_batch_rows": None,
    "mcp_generation_time_to_first_token_seconds": "model",
    "mcp_generation_inter_token_latency_seconds": "model",
}
_COUNTERS = {
    "mcp_generation_tokens": "model",
    "mcp_generation_prompt_tokens": "model",
    "mcp_generation_prefix_cache_hit_tokens": "model",
}
_GAUGES = {
    "mcp_scheduler_queue_depth": "sla_class",
    "mcp_generation_kv_cache_usage_ratio": "model",
    "mcp_requests_in_flight": None,
}


def live_snapshot(families: Iterable[Metric] | None = None) -> dict[str, Any]:
    """``{"time": s, "requests": {class: n}, "refusals": {class: n}, "<histogram>": {key: {"le": [...],
    "counts": [...], "sum": s}}, "<counter or gauge>": {key: value}}``; keys are SLA classes or models
    (``"all"`` for series summed over everything)."""
    snapshot: dict[str, Any] = {"time": time.time(), "requests": {}, "refusals": {}}
    for family in server_registry().collect() if families is None else families:
        if family.name == "mcp_requests":
            _add_requests(snapshot, family)
        elif family.name in _HISTOGRAMS:
            snapshot[family.name] = _histogram(family, _HISTOGRAMS[family.name])
        elif family.name in _COUNTERS or family.name in _GAUGES:
            key = _COUNTERS.get(family.name) or _GAUGES.get(family.name)
            snapshot[family.name] = _summed(family, key)
    return snapshot


def _add_requests(snapshot: dict[str, Any], family: Metric) -> None:
    for sample in family.samples:
        if not sample.name.endswith("_total"):
            continue
        sla_class = sample.labels.get("sla_class", "")
        snapshot["requests"][sla_class] = snapshot["requests"].get(sla_class, 0.0) + sample.value
        if sample.labels.get("code") in REFUSAL_CODES:
            snapshot["refusals"][sla_class] = snapshot["refusals"].get(sla_class, 0.0) + sample.value


def _summed(family: Metric, key: str | None) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for sample in family.samples:
        if sample.name.endswith("_created"):
            continue
        totals[sample.labels.get(key, "") if key else "all"] += sample.value
    return dict(totals)


def _histogram(family: Metric, key: str | None) -> dict[str, dict[str, Any]]:
    """Cumulative bucket counts per key, summed over the other labels; ``le`` ascending, +Inf last."""
    buckets: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    sums: dict[str, float] = defaultdict(float)
    for sample in family.samples:
        group = sample.labels.get(key, "") if key else "all"
        if sample.name.endswith("_bucket"):
            buckets[group][float(sample.labels["le"])] += sample.value
        elif sample.name.endswith("_sum"):
            sums[group] += sample.value
    return {
        group: {
            "le": [bound if bound != float("inf") else None for bound in sorted(counts)],
            "counts": [counts[bound] for bound in sorted(counts)],
            "sum": sums[group],
        }
        for group, counts in buckets.items()
    }
