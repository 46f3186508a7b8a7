"""The engine's metrics (declared in observability/metrics.py) and one OpenTelemetry span per generation."""

from __future__ import annotations

import time
from typing import Any, Protocol

from mcp2026ai.generation.types import FinishReason, GenerationRequest
from mcp2026ai.observability import metrics, tracing


class _Job(Protocol):
    """What the telemetry reads of the engine's jobs."""

    accepted_at: float
    first_token_at: float | None
    span: Any


class EngineTelemetry:
    """Metric children of one model, looked up once."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._ttft = metrics.GENERATION_TTFT.labels(model)
        self._itl = metrics.GENERATION_ITL.labels(model)
        self._e2e = metrics.GENERATION_E2E.labels(model)
        self._prompt = metrics.GENERATION_PROMPT_TOKENS.labels(model)
        self._generated = metrics.GENERATION_TOKENS.labels(model)
        self._running = metrics.GENERATION_SEQUENCES.labels(model, "running")
        self._waiting = metrics.GENERATION_SEQUENCES.labels(model, "waiting")
        self._kv = metrics.GENERATION_KV_USAGE.labels(model)
        self._prefix_hits = metrics.GENERATION_PREFIX_HIT_TOKENS.labels(model)
        self._prefix_queries = metrics.GENERATION_PREFIX_QUERY_TOKENS.labels(model)
        self._fragmentation = metrics.GENERATION_KV_FRAGMENTATION.labels(model)
        self._preemptions = metrics.GENERATION_PREEMPTIONS.labels(model)
        self._drafted = metrics.GENERATION_SPEC_DRAFTED.labels(model)
        self._accepted = metrics.GENERATION_SPEC_ACCEPTED.labels(model)
        self._acceptance = metrics.GENERATION_SPEC_ACCEPTANCE.labels(model)
        self.drafted_tokens = 0
        self.accepted_tokens = 0
        self._prefix_rate = metrics.GENERATION_PREFIX_HIT_RATE.labels(model)

    def start_span(self, request: GenerationRequest) -> Any:
        attributes = {
            "model": self.model,
            "slo.class": request.sla_class.value,
            "gen_ai.request.max_tokens": request.params.max_tokens or 0,
            "gen_ai.usage.input_tokens": len(request.prompt_ids),
        }
        return tracing.start_span(f"generate {self.model}", request.headers, attributes)

    def prompt_tokens(self, count: int) -> None:
        self._prompt.inc(count)

    def prefix_cache(self, hit_tokens: int, hit_rate: float, queried_tokens: int = 0) -> None:
        self._prefix_queries.inc(queried_tokens)
        self._prefix_hits.inc(hit_tokens)
        self._prefix_rate.set(hit_rate)

    def first_token(self, seconds: float) -> None:
        self._ttft.observe(seconds)

    def inter_token(self, seconds: float) -> None:
        self._itl.observe(seconds)

    def observe_state(self, running: int, waiting: int, kv_usage: float, fragmentation: float = 0.0) -> None:
        self._running.set(running)
        self._waiting.set(waiting)
        self._kv.set(kv_usage)
        self._fragmentation.set(fragmentation)

    def preempted(self) -> None:
        self._preemptions.inc()

    def speculated(self, drafted: int, accepted: int) -> None:
        self.drafted_tokens += drafted
        self.accepted_tokens += accepted
        self._drafted.inc(drafted)
        self._accepted.inc(accepted)
        self._acceptance.set(self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else 0.0)

    def finished(self, job: _Job, reason: FinishReason, generated: int) -> None:
        seconds = time.monotonic() - job.accepted_at
        self._e2e.observe(seconds)
        self._generated.inc(generated)
        metrics.GENERATION_REQUESTS.labels(self.model, reason.value).inc()
        span = job.span
        if span.is_recording():
            span.set_attribute("gen_ai.usage.output_tokens", generated)
            span.set_attribute("gen_ai.response.finish_reason", reason.value)
            if job.first_token_at is not None:
                span.set_attribute("gen_ai.time_to_first_token_ms", (job.first_token_at - job.accepted_at) * 1000)
        span.end()

    def rejected(self, job: _Job) -> None:
        """Refused on arrival (its SLA class queue full, or shutting down): never ran."""
        metrics.GENERATION_REQUESTS.labels(self.model, "rejected").inc()
        job.span.end()

    def failed(self, job: _Job) -> None:
        metrics.GENERATION_REQUESTS.labels(self.model, "error").inc()
        job.span.end()
