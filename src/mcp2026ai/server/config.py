"""Server configuration (requested settings; the built servers live in lifecycle.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.observability.export import TraceExport
from mcp2026ai.scheduling.host import HostTuning
from mcp2026ai.security.serving import ServingSecurity
from mcp2026ai.serving.limits import GenerationLimits


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address both servers bind.")
    http_port: int = Field(8080, ge=0, le=65535, description="HTTP port; 0 picks a free one.")
    grpc_port: int | None = Field(8081, ge=0, le=65535, description="gRPC port; None disables gRPC.")
    max_request_bytes: int = Field(64 << 20, ge=1024, description="Largest request body accepted (413 above).")
    max_json_bytes: int = Field(
        16 << 20,
        ge=1024,
        description="Largest JSON part of an HTTP request (413 above): JSON numbers take several times their "
        "size in memory once parsed, so large tensors belong in the binary tensor extension.",
    )
    max_inflight_body_bytes: int = Field(
        256 << 20,
        ge=1024,
        description="HTTP request bodies held at once over all connections (429 + Retry-After above).",
    )
    max_connections: int | None = Field(
        None,
        ge=1,
        description="HTTP connections open at once; one more gets a 503 JSON with Retry-After and is closed. gRPC "
        "multiplexes calls over few connections, so there it bounds calls in progress (RESOURCE_EXHAUSTED above).",
    )
    header_timeout_s: float | None = Field(
        15.0,
        gt=0,
        description="Seconds a connection has to send a request line and headers (then 408, closed); None: no limit.",
    )
    keep_alive_s: int = Field(30, ge=1, description="Seconds an idle HTTP keep-alive connection stays open.")
    listen_backlog: int = Field(
        65535,
        ge=1,
        le=65535,
        description="HTTP connections the kernel completes and holds before the server accepts them (the kernel "
        "caps it at net.core.somaxconn). A burst over it has its handshakes dropped and retried by the clients a "
        "second or more later; uvicorn's own default is 2048.",
    )
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field(
        "auto",
        description="The server's event loop. auto: uvloop when the process serves no gRPC listener (HTTP "
        "answers take less of the loop's CPU there), asyncio's own loop otherwise (grpc.aio degrades on "
        "uvloop: docs/notebook/benchmarks.md, changes tried and not kept).",
    )
    drain_timeout_s: float = Field(30.0, ge=0, description="How long shutdown waits for in-flight requests.")
    host_tuning: HostTuning = Field(
        default_factory=HostTuning,
        description="Process-wide and OS-wide settings (GIL switch interval, bulk batches' niceness, the heap, the "
        "lone-session plan), all off by default; a preset name (latency) or the knobs (scheduling/host.py).",
    )
    batch_lines_in_flight: int = Field(
        2,
        ge=1,
        le=256,
        description="Lines of OpenAI batches (/v1/batches) answered at once, all running batches together, in the "
        "best-effort class: few, so that latency-critical requests find engine slots and CPU "
        "(benchmarks/llm/batch_interference.py).",
    )
    grpc_acceptors: int = Field(
        5,
        ge=1,
        le=64,
        description="ModelInfer calls the gRPC server keeps requested from gRPC core at once (grpc.aio alone: 1); "
        "RPCs that arrive together start together instead of one per event-loop turn.",
    )
    log_level: str = Field("warning", description="uvicorn / grpc log level.")
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses (or CIDR networks) of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto "
        "name the real client; from anyone else these headers are ignored (the audit log records the socket peer).",
    )
    sync_interval_s: float = Field(2.0, gt=0, description="How often served versions are reconciled with the registry.")
    memory_budget_mb: float | None = Field(
        None,
        gt=0,
        description="One memory budget for every model held (tensor, embedding, language): a registered model "
        "not held is loaded by its first request; a load that would exceed the budget evicts the least recently "
        "used model of the lowest SLA class first (never a latency-critical model named at start), or is "
        "refused (503) naming the budget. None: no budget.",
    )
    plan_with_policy: bool = Field(False, description="Measure and pick each model's plan against its contract.")
    runtime: str | None = Field(
        None, description="Run every model on this runtime (`--backend openvino`); None: the policy picks."
    )
    reuse_port: bool = Field(False, description="SO_REUSEPORT on both listeners (set for --workers > 1).")
    peer_dir: Path | None = Field(
        None, description="Where the processes of --workers N meet to sum their statistics (set by the parent)."
    )
    security: ServingSecurity = Field(
        default_factory=ServingSecurity, description="Auth, TLS, signed-model loading and the audit log."
    )
    traces: TraceExport = Field(default_factory=TraceExport, description="Where request spans are exported.")
    generation_configs: list[Path] = Field(
        default_factory=list,
        description="mcp-config.yaml files whose generation defaults apply to the language models they name; "
        "watched, and re-applied when they change.",
    )
    generation: EngineConfig = Field(
        default_factory=EngineConfig, description="Text generation engines of the language models served."
    )
    metrics_compat: Literal["vllm"] | None = Field(
        None, description="Also expose another server's metric names (vllm: vLLM's vllm:*) as aliases."
    )
    # --- the server's edge (docs/security.md, "Server surfaces") ---
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names (or *.domain patterns) the HTTP server answers besides the loopback names; a "
        "loopback-bound server answers only localhost, 127.0.0.1 and ::1 otherwise (DNS rebinding), a server bound "
        "elsewhere every name unless some are given here.",
    )
    allow_unauthenticated: bool = Field(
        False,
        description="Let a server bound to a non-loopback address start without --auth (refused otherwise).",
    )
    disabled_apis: list[Literal["repository", "shared-memory", "settings", "rollouts"]] = Field(
        default_factory=list,
        description="Management API groups switched off on both transports (as Triton's --http-restricted-api): "
        "repository (load/unload), shared-memory (register/unregister/status), settings (trace and log settings "
        "changes), rollouts (the console's promote/rollback/abort). A call to one is refused with 403.",
    )
    body_timeout_s: float | None = Field(
        30.0,
        gt=0,
        description="Seconds an HTTP request body may go without a byte arriving (then 408); None: no limit.",
    )
    generation_limits: GenerationLimits = Field(
        default_factory=GenerationLimits,
        description="What one text-generation request may ask for (messages, characters, max_tokens, n, stops).",
    )
    # Text formats of the language models (issue 53): vLLM's flags of the same names.
    tool_call_parser: Literal["auto", "hermes", "llama3_json", "mistral", "qwen3_coder", "pythonic"] = Field(
        "auto", description="How tool calls are read from the answers; auto: from each model's chat template."
    )
    reasoning_parser: Literal["deepseek_r1", "qwen3"] | None = Field(
        None, description="Split <think>...</think> into reasoning_content (None: the answer is all content)."
    )
    generation_config: Literal["auto", "none"] = Field(
        "auto", description="auto: a model's own sampling defaults fill what a request leaves out; none: ignore them."
    )
    lora_allowed_dirs: list[Path] = Field(
        default_factory=list,
        description="Folders POST /v1/load_lora_adapter may read adapters from (links resolved first); none: "
        "that API refuses every path (registered adapters are served all the same).",
    )
