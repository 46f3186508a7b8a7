"""Every Prometheus metric of mcp2026ai, declared in one place.

All series live in :data:`REGISTRY` (served at ``/metrics``, encoded as the scraper asks: :func:`scrape`);
docs/metrics.md documents each name, its labels and where it is recorded. The three latency histograms
also keep native buckets (:data:`NATIVE_HISTOGRAMS`, shown to OpenMetrics 2.0 scrapes; about 2 us more
per observation than a classic histogram alone). Names:

- ``mcp_requests_total{model,version,protocol,sla_class,code}``: finished requests by status code.
- ``mcp_request_duration_seconds{model,version,protocol,sla_class}``: end-to-end latency histogram.
- ``mcp_compute_duration_seconds{model,version}``: backend run time of each batch (histogram).
- ``mcp_policy_decisions_total{model,trigger,outcome}``: policy decisions logged.
- ``mcp_requests_in_flight{protocol}``: requests being handled now.
- ``mcp_model_load_seconds{model,version}``: time the last load of a version took.
- ``mcp_models_loaded``: number of model versions loaded.
- ``mcp_route_decisions_total{model,version,reason}``: routed requests by reason (pinned, header,
  canary, stable, default).
- ``mcp_circuit_state{model,version}`` (0 closed, 1 half-open, 2 open),
  ``mcp_circuit_transitions_total{model,version,state}``, ``mcp_circuit_fallbacks_total{model,version,target}``.
- ``mcp_canary_analysis{model,version,figure}``, ``mcp_canary_rollbacks_total{model,version}``.
- ``mcp_shadow_*{model,version,shadow_version}``: mirrored requests, status mismatches, output
  diffs (max abs, rel L2, top-1 rows) and latencies; ``version`` is the primary's.
- ``process_*`` / ``python_*``: CPU, memory, file descriptors, GC of the server process.

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

Text generation (one series set per language model):

- ``mcp_generation_time_to_first_token_seconds``, ``mcp_generation_inter_token_latency_seconds``,
  ``mcp_generation_e2e_seconds`` (histograms; model).
- ``mcp_generation_prompt_tokens_total``, ``mcp_generation_tokens_total`` (counters; model).
- ``mcp_generation_kv_cache_fragmentation_ratio`` (gauge; model), ``mcp_generation_preemptions_total``
  (counter; model).
- ``mcp_generation_speculative_draft_tokens_total``, ``..._accepted_tokens_total`` (counters; model),
  ``mcp_generation_speculative_acceptance_ratio`` (gauge; model).
- ``mcp_generation_prefix_cache_hit_tokens_total`` (counter; model), ``mcp_generation_prefix_cache_hit_ratio``
  (gauge; model).
- ``mcp_generation_requests_total`` (counter; model, finish_reason).
- ``mcp_generation_sequences`` (gauge; model, state = running | waiting).
- ``mcp_generation_kv_cache_usage_ratio`` (gauge; model).
- ``mcp_generation_prefix_cache_query_tokens_total`` (counter; model): prompt tokens looked up.

``mcp serve --metrics-compat vllm`` adds vLLM's names as aliases of the generation series
(:data:`VLLM_ALIASES`).
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

from mcp2026ai.observability import deferred
from mcp2026ai.observability.compat import Alias, WithAliases
from mcp2026ai.observability.native import NativeHistogram, with_native_samples

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

SHARED_DIR = os.environ.get(MULTIPROCESS_DIR_VARIABLE) or None
"""Where ``mcp serve --workers N`` keeps every worker's series (``prometheus_client`` multiprocess mode,
switched on by this variable before ``prometheus_client`` is imported; the parent sets it for its
workers only). A scrape reaches one worker and shows them all: counters and histograms summed over the
workers, gauges as their ``multiprocess_mode`` says (in-flight requests and queue depths summed,
per-worker state such as circuit breakers and batching windows one series per worker with a ``pid``
label). Not under workers: the ``process_*``/``python_*`` collectors (per process) and native
histogram buckets (kept in memory per process; the classic buckets are merged)."""

REGISTRY = CollectorRegistry(auto_describe=True)
REGISTRY.register(deferred.FLUSH_ON_COLLECT)  # first: a collect sees the hot path's pending observations
deferred.defer(SHARED_DIR is None)  # workers' series are files another worker's scrape reads
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.035,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.5,
    0.8,
    1.0,
    2.0,
    5.0,
    10.0,
)
UNKNOWN_MODEL = "_unknown"

UNKNOWN_CLASS = "_unknown"
UNKNOWN_VERSION = "_unknown"
"""The version label of a request that named a version the server does not serve (the label set stays
the served versions, whatever clients send)."""

REQUESTS = Counter(
    "mcp_requests",
    "Finished inference requests by status code.",
    ["model", "version", "protocol", "sla_class", "code"],
    registry=REGISTRY,
)
REQUEST_DURATION = NativeHistogram(
    "mcp_request_duration_seconds",
    "End-to-end inference latency in the server (decode to encode).",
    ["model", "version", "protocol", "sla_class"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
IN_FLIGHT = Gauge(
    "mcp_requests_in_flight",
    "Inference requests being handled.",
    ["protocol"],
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
MODEL_LOAD_SECONDS = Gauge(
    "mcp_model_load_seconds",
    "Seconds the last load of a model version took.",
    ["model", "version"],
    registry=REGISTRY,
    multiprocess_mode="livemax",
)
MODELS_LOADED = Gauge(
    "mcp_models_loaded", "Model versions loaded and serving.", registry=REGISTRY, multiprocess_mode="livemax"
)
MODEL_LOADS = Counter(
    "mcp_model_loads_total",
    "Model versions loaded (every kind), by why: start, sync (registry or rollout), repository (load API), "
    "request (load on first request under the memory budget).",
    ["reason"],
    registry=REGISTRY,
)
MODEL_EVICTIONS = Counter(
    "mcp_model_evictions_total",
    "Models unloaded to make room under the memory budget (--memory-budget-mb).",
    ["model"],
    registry=REGISTRY,
)
MODEL_COLD_STARTS = Histogram(
    "mcp_model_cold_start_seconds",
    "Seconds a load on first request (a cold start under the memory budget) took, by model kind.",
    ["kind"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
    registry=REGISTRY,
)
MODEL_RESIDENT_BYTES = Gauge(
    "mcp_model_resident_bytes",
    "Resident memory a loaded model version added to the process, measured at its load (0 once unloaded).",
    ["model", "version"],
    registry=REGISTRY,
    multiprocess_mode="livesum",
)


COMPUTE_DURATION = NativeHistogram(
    "mcp_compute_duration_seconds",
    "Backend run time of one batch (one request when not batching).",
    ["model", "version"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
POLICY_DECISIONS = Counter(
    "mcp_policy_decisions_total",
    "Policy decisions logged, by trigger (register, serve, manual, replan) and outcome (chosen, infeasible).",
    ["model", "trigger", "outcome"],
    registry=REGISTRY,
)


_CHILDREN: dict[tuple[object, tuple[str, ...]], Any] = {}


def child(metric: Any, *labels: str) -> Any:
    """``metric.labels(*labels)``, looked up once per label set: ``labels()`` costs microseconds, and
    the series below are touched per request."""
    key = (metric, labels)
    found = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*labels)
    return found


def observe_load(kind: str, model: str, version: str, reason: str, seconds: float) -> None:
    """One model version loaded: its load seconds, the load's reason, and a cold start's seconds."""
    MODEL_LOAD_SECONDS.labels(model, version).set(seconds)
    MODEL_LOADS.labels(reason).inc()
    if reason == "request":
        MODEL_COLD_STARTS.labels(kind).observe(seconds)


def observe_request(model: str, version: str, protocol: str, sla_class: str, code: str, seconds: float) -> None:
    child(REQUESTS, model, version, protocol, sla_class, code).inc()
    child(REQUEST_DURATION, model, version, protocol, sla_class).observe(seconds)


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
    multiprocess_mode="liveall",  # each worker has its own breaker: one series per worker (pid label)
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
    multiprocess_mode="liveall",
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
SHADOW_LATENCY = Histogram(
    "mcp_shadow_latency_seconds",
    "Latency of mirrored requests, primary and shadow side by side (role label).",
    [*_SHADOW_LABELS, "role"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)


# --- scheduler: dynamic batching, SLA-class queues ----------------------------------------------

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
    multiprocess_mode="livesum",
)
SCHEDULER_QUEUE_WAIT = NativeHistogram(
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
    multiprocess_mode="liveall",  # each worker adapts its own window
)

# --- text generation (engine: generation/engine.py) ------------------------------------------------

TOKEN_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0)
GENERATION_E2E_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)

GENERATION_TTFT = Histogram(
    "mcp_generation_time_to_first_token_seconds",
    "Seconds from accepting a generation request to its first generated token.",
    ["model"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
GENERATION_ITL = Histogram(
    "mcp_generation_inter_token_latency_seconds",
    "Seconds between two consecutive tokens of one sequence.",
    ["model"],
    buckets=TOKEN_LATENCY_BUCKETS,
    registry=REGISTRY,
)
GENERATION_E2E = Histogram(
    "mcp_generation_e2e_seconds",
    "Seconds from accepting a generation request to its last token.",
    ["model"],
    buckets=GENERATION_E2E_BUCKETS,
    registry=REGISTRY,
)
GENERATION_PROMPT_TOKENS = Counter(
    "mcp_generation_prompt_tokens", "Prompt tokens prefilled.", ["model"], registry=REGISTRY
)
GENERATION_PREFIX_HIT_TOKENS = Counter(
    "mcp_generation_prefix_cache_hit_tokens",
    "Prompt tokens whose KV came from the prefix cache instead of the prefill "
    "(hit rate: this over mcp_generation_prompt_tokens_total).",
    ["model"],
    registry=REGISTRY,
)
GENERATION_PREFIX_HIT_RATE = Gauge(
    "mcp_generation_prefix_cache_hit_ratio",
    "Share of prompt tokens served from the prefix cache since the model loaded.",
    ["model"],
    registry=REGISTRY,
    multiprocess_mode="liveall",
)
GENERATION_TOKENS = Counter("mcp_generation_tokens", "Tokens generated (every choice).", ["model"], registry=REGISTRY)
GENERATION_REQUESTS = Counter(
    "mcp_generation_requests",
    "Finished generation requests by finish reason of their first choice (stop, length, abort, error, rejected).",
    ["model", "finish_reason"],
    registry=REGISTRY,
)
GENERATION_SEQUENCES = Gauge(
    "mcp_generation_sequences",
    "Sequences running (holding a KV slot) or waiting for one.",
    ["model", "state"],
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
GENERATION_KV_USAGE = Gauge(
    "mcp_generation_kv_cache_usage_ratio",
    "Share of the KV cache's token capacity holding running sequences' tokens.",
    ["model"],
    registry=REGISTRY,
    multiprocess_mode="liveall",
)

GENERATION_KV_FRAGMENTATION = Gauge(
    "mcp_generation_kv_cache_fragmentation_ratio",
    "KV token positions reserved (in blocks held by sequences) but not yet filled, over those reserved.",
    ["model"],
    registry=REGISTRY,
    multiprocess_mode="liveall",
)
GENERATION_PREEMPTIONS = Counter(
    "mcp_generation_preemptions",
    "Running requests preempted because the KV cache ran out of blocks (recomputed later).",
    ["model"],
    registry=REGISTRY,
)

GENERATION_SPEC_DRAFTED = Counter(
    "mcp_generation_speculative_draft_tokens",
    "Tokens drafted by prompt lookup for verification.",
    ["model"],
    registry=REGISTRY,
)
GENERATION_SPEC_ACCEPTED = Counter(
    "mcp_generation_speculative_accepted_tokens", "Drafted tokens the model confirmed.", ["model"], registry=REGISTRY
)
GENERATION_SPEC_ACCEPTANCE = Gauge(
    "mcp_generation_speculative_acceptance_ratio",
    "Accepted over drafted tokens since the model loaded.",
    ["model"],
    registry=REGISTRY,
    multiprocess_mode="liveall",
)

GENERATION_PREFIX_QUERY_TOKENS = Counter(
    "mcp_generation_prefix_cache_query_tokens",
    "Prompt tokens looked up in the prefix cache (hits: mcp_generation_prefix_cache_hit_tokens_total).",
    ["model"],
    registry=REGISTRY,
)

# --- compatible names (``mcp serve --metrics-compat vllm``) ------------------------------------------

VLLM_ALIASES = (
    Alias("vllm:num_requests_running", "mcp_generation_sequences", "Sequences running.", {"state": "running"}),
    Alias("vllm:num_requests_waiting", "mcp_generation_sequences", "Sequences waiting.", {"state": "waiting"}),
    Alias("vllm:kv_cache_usage_perc", "mcp_generation_kv_cache_usage_ratio", "KV cache usage (1 = full)."),
    Alias("vllm:time_to_first_token_seconds", "mcp_generation_time_to_first_token_seconds", "Time to first token."),
    Alias("vllm:inter_token_latency_seconds", "mcp_generation_inter_token_latency_seconds", "Inter-token latency."),
    Alias("vllm:e2e_request_latency_seconds", "mcp_generation_e2e_seconds", "End-to-end request latency."),
    Alias("vllm:prompt_tokens", "mcp_generation_prompt_tokens", "Prefill tokens processed."),
    Alias("vllm:generation_tokens", "mcp_generation_tokens", "Generation tokens processed."),
    Alias("vllm:prefix_cache_queries", "mcp_generation_prefix_cache_query_tokens", "Prefix cache queries (tokens)."),
    Alias("vllm:prefix_cache_hits", "mcp_generation_prefix_cache_hit_tokens", "Prefix cache hits (tokens)."),
    Alias("vllm:num_preemptions", "mcp_generation_preemptions", "Cumulative preemptions."),
)
"""vLLM's names, which Kubernetes' Gateway API inference extension and llm-d route on: each is its
``mcp_generation_*`` twin (``num_requests_*`` count sequences: a request with n choices runs n), with
the ``model`` label named ``model_name`` as vLLM names it."""
COMPAT_ALIASES = {"vllm": VLLM_ALIASES}
COMPAT_LABELS = {"vllm": {"model": "model_name"}}

NATIVE_HISTOGRAMS = (REQUEST_DURATION, COMPUTE_DURATION, SCHEDULER_QUEUE_WAIT)
"""The latency histograms that also keep native buckets (exposed to OpenMetrics 2.0 scrapes)."""
REGISTRY_WITH_NATIVE = with_native_samples(REGISTRY, NATIVE_HISTOGRAMS)


def scrape(accept: str, compat: str | None = None) -> tuple[bytes, str]:
    """The registry encoded as the scraper's ``Accept`` header asks (``prometheus_client`` negotiates):
    Prometheus text by default, OpenMetrics 1.0, or OpenMetrics 2.0 with the native histograms; with
    ``compat`` (``vllm``), that server's names too (:data:`COMPAT_ALIASES`).

    Under ``mcp serve --workers N`` (:data:`SHARED_DIR` set) it is every worker's series instead, as
    ``prometheus_client``'s multiprocess mode merges them (see :data:`SHARED_DIR`)."""
    encode, content_type = choose_encoder(accept)
    deferred.flush_all()
    native = content_type.startswith("application/openmetrics-text; version=2.")
    registry: Any = _all_workers() if SHARED_DIR is not None else REGISTRY_WITH_NATIVE if native else REGISTRY
    if compat is not None:
        registry = WithAliases(registry, COMPAT_ALIASES[compat], COMPAT_LABELS[compat])
    return encode(registry), content_type


def server_registry() -> CollectorRegistry:
    """This server's series: :data:`REGISTRY`, or every worker's under ``--workers N`` (what /metrics shows)."""
    deferred.flush_all()
    return _all_workers() if SHARED_DIR is not None else REGISTRY


def _all_workers() -> CollectorRegistry:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=SHARED_DIR)  # type: ignore[no-untyped-call]
    return registry
