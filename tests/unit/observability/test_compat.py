"""Compatible metric names as aliases computed from their twins at scrape time (observability/compat.py)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from mcp2026ai.observability.compat import Alias, WithAliases


def test_aliases_rename_families_samples_and_labels_and_select_by_label() -> None:
    registry = CollectorRegistry()
    tokens = Counter("mcp_tokens", "Tokens.", ["model"], registry=registry)
    sequences = Gauge("mcp_sequences", "Sequences.", ["model", "state"], registry=registry)
    latency = Histogram("mcp_latency_seconds", "Latency.", ["model"], buckets=(0.1, 1.0), registry=registry)
    tokens.labels("m").inc(7)
    sequences.labels("m", "running").set(3)
    sequences.labels("m", "waiting").set(5)
    latency.labels("m").observe(0.5)
    aliases = [
        Alias("x:tokens", "mcp_tokens", "Tokens."),
        Alias("x:running", "mcp_sequences", "Running.", {"state": "running"}),
        Alias("x:latency_seconds", "mcp_latency_seconds", "Latency."),
        Alias("x:absent", "mcp_nothing", "Not declared: left out."),
    ]
    text = generate_latest(WithAliases(registry, aliases, {"model": "model_name"})).decode()  # type: ignore[arg-type]
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert values[("x:tokens_total", (("model_name", "m"),))] == 7
    assert values[("x:running", (("model_name", "m"),))] == 3
    assert values[("x:latency_seconds_bucket", (("le", "1.0"), ("model_name", "m")))] == 1
    assert values[("x:latency_seconds_count", (("model_name", "m"),))] == 1
    assert values[("mcp_tokens_total", (("model", "m"),))] == 7  # the originals stay
    assert not any(name.startswith("x:absent") for name, _ in values)
    assert sum(1 for name, _ in values if name == "x:running") == 1
