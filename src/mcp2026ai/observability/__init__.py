"""Observability: Prometheus metrics, tracing, logging."""
