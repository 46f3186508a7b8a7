"""``mcp serve``: serve registered models over KServe v2 HTTP and gRPC."""

from __future__ import annotations

import logging
import multiprocessing
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.app import register_paths, serve_blocking
from mcp2026ai.cli import context
from mcp2026ai.cli.output import console
from mcp2026ai.cli.policy_generation import NoFeasibleGenerationPlanError
from mcp2026ai.cli.serve_limits import parse_limits
from mcp2026ai.cli.serve_security import check_signatures, serving_security
from mcp2026ai.cli.triton import repository_registry
from mcp2026ai.deploy import ray as ray_deployment
from mcp2026ai.deploy.ray import RayServeOptions
from mcp2026ai.deploy.workers import run_workers
from mcp2026ai.errors import InvalidArgumentError, MCPError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.observability.export import DEFAULT_OTLP_ENDPOINT, TraceExport, check_trace_export
from mcp2026ai.policy.generation import ensure_generation_plan
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.probe import query_gpus
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.runtime.catalog import backend_class
from mcp2026ai.scheduling.cpu_priority import BULK_NICE
from mcp2026ai.scheduling.gil import SHORT_INTERVAL_S
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.lifecycle import BoundPorts, ensure_ports_free
from mcp2026ai.serving.llm_config import config_notes, load_serving_config, resolve_model


class MetricsCompat(StrEnum):
    VLLM = "vllm"


class EventLoop(StrEnum):
    AUTO = "auto"
    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"


class TraceExporter(StrEnum):
    NONE = "none"
    CONSOLE = "console"
    OTLP = "otlp"


def serve(
    name: Annotated[list[str] | None, typer.Option(help="Registered model to serve; repeatable. Default: all.")] = None,
    model_path: Annotated[
        list[Path] | None, typer.Option(help="Model file to register (under its file stem) and serve; repeatable.")
    ] = None,
    model_repository: Annotated[
        Path | None,
        typer.Option(
            help="Serve a Triton model repository as it stands (<name>/config.pbtxt, <name>/<N>/model.onnx); "
            "alone, in one process."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port (0 picks a free one).")] = 8080,
    grpc_port: Annotated[int, typer.Option(help="gRPC port (0 picks a free one, -1 disables).")] = 8081,
    max_request_mb: Annotated[float, typer.Option(help="Largest request body in MiB (413 above).")] = 64.0,
    drain_timeout: Annotated[float, typer.Option(help="Seconds to drain in-flight requests on shutdown.")] = 30.0,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Server processes sharing the ports.")] = 1,
    replicas: Annotated[
        int | None,
        typer.Option(min=1, max=1024, help="Ray Serve replicas (extra [ray]); default: the contract's range, if any."),
    ] = None,
    ray: Annotated[
        bool, typer.Option(help="Serve through Ray Serve even without --replicas (contract scaling).")
    ] = False,
    ray_address: Annotated[
        str | None, typer.Option(help="Existing Ray cluster for --replicas (e.g. auto, ray://host:10001).")
    ] = None,
    ray_failover: Annotated[
        bool,
        typer.Option(
            help="On Ray: a front on the head node sends a request again to another replica when its replica "
            "dies before answering (--no-ray-failover: Ray's proxy alone, one hop less)."
        ),
    ] = True,
    grpc_acceptors: Annotated[
        int,
        typer.Option(min=1, max=64, help="ModelInfer calls the gRPC server accepts at once (grpc.aio alone: 1)."),
    ] = 5,
    policy: Annotated[
        bool, typer.Option(help="Run each model with the plan measured against its contract (stored plans are reused).")
    ] = True,
    backend: Annotated[
        str | None,
        typer.Option(
            help="Run every model on this runtime: onnxruntime or openvino (extra [openvino]). Default: "
            "the policy measures each installed runtime and picks."
        ),
    ] = None,
    sync_interval: Annotated[float, typer.Option(help="Seconds between hot-reload checks of the registry.")] = 2.0,
    memory_budget_mb: Annotated[
        float | None,
        typer.Option(
            min=1,
            help="One memory budget in MiB for the language models held: loads evict the least recently used "
            "model of the lowest SLA class (never a latency-critical one named at start), or are refused.",
        ),
    ] = None,
    max_num_seqs: Annotated[
        int, typer.Option(min=1, max=256, help="Language models: sequences decoded together (KV slots).")
    ] = 8,
    max_model_len: Annotated[
        int, typer.Option(min=16, help="Language models: longest prompt + answer in tokens (capped at the model's).")
    ] = 2048,
    kv_cache_mb: Annotated[
        float | None,
        typer.Option(
            min=1,
            help="Language models: KV cache memory in 16-token blocks (default: the contract's memory budget, "
            "else max-num-seqs x max-model-len tokens).",
        ),
    ] = None,
    speculative_tokens: Annotated[
        int,
        typer.Option(
            min=0,
            max=16,
            help="Language models: tokens drafted by prompt lookup per step for each running sequence.",
        ),
    ] = 0,
    prefix_cache_mb: Annotated[
        float,
        typer.Option(
            min=0, help="Language models: memory for cached prompt-prefix KV (shared system prompts); 0: off."
        ),
    ] = 128.0,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            help="Language models: a per-request limit as NAME=VALUE (max_messages, max_prompt_chars, max_tokens, "
            "default_max_tokens, max_n, max_top_logprobs, max_stop_strings, max_stop_chars, max_body_bytes); "
            "repeatable. See docs/llm-reliability.md.",
        ),
    ] = None,
    stream_buffer_tokens: Annotated[
        int,
        typer.Option(
            min=1, help="Language models: tokens a stream's reader may fall behind before its stream is ended."
        ),
    ] = 1024,
    log_level: Annotated[str, typer.Option(help="Log level.")] = "warning",
    serving_config: Annotated[
        list[Path] | None,
        typer.Option(
            "--config",
            help="mcp-config.yaml of a language model (generation defaults, resources); serves the model it names "
            "and re-applies the file when it changes; repeatable.",
        ),
    ] = None,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a connection has to send a request's line and headers (then 408).")
    ] = 15.0,
    keep_alive: Annotated[int, typer.Option(min=1, help="Seconds an idle HTTP keep-alive connection stays open.")] = 30,
    listen_backlog: Annotated[
        int,
        typer.Option(
            min=1, max=65535, help="Connections the kernel holds for the server to accept (capped by somaxconn)."
        ),
    ] = 65535,
    loop: Annotated[
        EventLoop,
        typer.Option(help="Event loop: auto is uvloop without a gRPC listener (--grpc-port -1), else asyncio's."),
    ] = EventLoop.AUTO,
    gil_switch_interval_ms: Annotated[
        float,
        typer.Option(
            min=0.01,
            max=100,
            help="Python's GIL switch interval while model runs of a millisecond or more are on worker threads "
            "(Python's own, 5, otherwise).",
        ),
    ] = SHORT_INTERVAL_S * 1000,
    bulk_batch_nice: Annotated[
        int,
        typer.Option(
            min=0,
            max=19,
            help="While latency-critical requests are served, batches without one run at this much higher nice "
            "value (Linux; 0: all at normal priority).",
        ),
    ] = BULK_NICE,
    max_connections: Annotated[
        int | None,
        typer.Option(min=1, help="HTTP connections open at once (503 + Retry-After above); gRPC calls in progress."),
    ] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(help="Reverse proxy address or CIDR whose X-Forwarded-For is believed; repeatable."),
    ] = None,
    require_signed: Annotated[
        bool, typer.Option(help="Load only versions signed by a trusted key; refuse unsigned or tampered ones.")
    ] = False,
    trusted_key: Annotated[
        list[Path] | None, typer.Option(help="Extra trusted public key file (with --require-signed); repeatable.")
    ] = None,
    auth: Annotated[
        bool, typer.Option(help="Require bearer tokens (`mcp token create`) except on health probes.")
    ] = False,
    tls_cert: Annotated[Path | None, typer.Option(help="PEM certificate chain: serve HTTPS and gRPC over TLS.")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="PEM private key of --tls-cert.")] = None,
    tls_ca: Annotated[Path | None, typer.Option(help="PEM CA bundle that client certificates must chain to.")] = None,
    tls_require_client_cert: Annotated[
        bool, typer.Option(help="Mutual TLS: refuse clients without a certificate from --tls-ca.")
    ] = False,
    trace: Annotated[
        TraceExporter,
        typer.Option(help="Export request spans (OpenTelemetry): to the console or an OTLP/HTTP collector."),
    ] = TraceExporter.NONE,
    trace_endpoint: Annotated[str, typer.Option(help="OTLP/HTTP traces URL for --trace otlp.")] = DEFAULT_OTLP_ENDPOINT,
    trace_sample_ratio: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Share of new traces recorded (a sampled caller's traceparent is kept)."),
    ] = 1.0,
    metrics_compat: Annotated[
        MetricsCompat | None,
        typer.Option(help="Also expose vLLM's metric names (vllm:*) on /metrics, as aliases of mcp_generation_*."),
    ] = None,
) -> None:
    """Serve models; Ctrl-C or SIGTERM drains in-flight requests and unloads."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if backend is not None:
        backend_class(backend)  # unknown or not installed: one line naming the extra to install
    repository = None
    if model_repository is not None:
        if name or model_path or serving_config or workers > 1 or replicas or ray or ray_address:
            raise InvalidArgumentError(
                "--model-repository: serve it alone, in one process (no --name, --model-path, --config, "
                "--workers, --replicas or Ray)"
            )
        registry, repository = repository_registry(model_repository)
    else:
        registry = context.registry()
    names = list(name or []) + (repository.names if repository else [])
    watched = register_paths(registry, list(model_path or []))
    names += list(watched)
    names += serving_config_models(registry, list(serving_config or []), served_on_ray=replicas is not None or ray)
    if not names:
        names = registry.model_names()
    if not names:
        raise InvalidArgumentError("nothing to serve: register a model first or pass --model-path")
    config = ServerConfig(
        host=host,
        http_port=port,
        grpc_port=None if grpc_port < 0 else grpc_port,
        grpc_acceptors=grpc_acceptors,
        max_request_bytes=int(max_request_mb * (1 << 20)),
        max_connections=max_connections,
        header_timeout_s=header_timeout,
        keep_alive_s=keep_alive,
        listen_backlog=listen_backlog,
        event_loop=loop.value,
        gil_switch_interval_ms=gil_switch_interval_ms,
        bulk_batch_nice=bulk_batch_nice or None,
        drain_timeout_s=drain_timeout,
        log_level=log_level,
        trusted_proxies=list(trusted_proxy or []),
        plan_with_policy=policy,
        runtime=backend,
        sync_interval_s=sync_interval,
        memory_budget_mb=memory_budget_mb,
        security=serving_security(
            require_signed, trusted_key or [], auth, tls_cert, tls_key, tls_ca, tls_require_client_cert
        ),
        traces=TraceExport(exporter=trace.value, endpoint=trace_endpoint, sample_ratio=trace_sample_ratio),
        generation=EngineConfig(
            max_num_seqs=max_num_seqs,
            max_model_len=max_model_len,
            kv_cache_mb=kv_cache_mb,
            speculative_tokens=speculative_tokens,
            prefix_cache_mb=prefix_cache_mb,
            stream_buffer_deltas=stream_buffer_tokens,
        ),
        generation_limits=parse_limits(list(limit or [])),
        generation_configs=[path.resolve() for path in serving_config or []],
        metrics_compat=metrics_compat.value if metrics_compat else None,
    )
    check_trace_export(config.traces)
    names = list(dict.fromkeys(names))
    check_signatures(registry, names, config.security)
    on_ray = replicas is not None or ray or ray_address is not None
    ensure_ports_free(config)  # before the policy's measurements: a taken port fails in a second, not a minute
    if policy:  # measured in a child: this process loads only the runtimes it serves with
        _plan_in_child(names, backend, registry.home)
    if on_ray:
        _serve_on_ray(
            registry, names, config, RayServeOptions(replicas=replicas, address=ray_address, failover=ray_failover)
        )
    elif workers == 1:
        serve_blocking(registry, names, config, on_ready=_announce, watched=watched, repository=repository)
    else:
        started = run_workers(registry.home, names, config, workers)
        _announce(started.ports, [registry.resolve(name) for name in names], workers)
        started.wait()
    console.print("server stopped")


def _serve_on_ray(registry: ModelRegistry, names: list[str], config: ServerConfig, options: RayServeOptions) -> None:
    chosen = ray_deployment.start(registry, names, config, options)
    scaling = chosen.get("autoscaling_config")
    replicas = f"{scaling['min_replicas']}-{scaling['max_replicas']}" if scaling else str(chosen["num_replicas"])
    models = ",".join(registry.resolve(name).ref for name in names)
    print(f"listening http={config.http_port} grpc=off models={models} replicas={replicas} (Ray Serve)", flush=True)
    try:
        ray_deployment.wait_for_signal()
    finally:
        ray_deployment.stop()


def serving_config_models(registry: ModelRegistry, paths: list[Path], served_on_ray: bool) -> list[str]:
    """The language models ``--config`` files name (each validated now: an unknown model is refused with
    the registered ones); one line for each thing a file asks that this run will not do."""
    names = []
    for path in paths:
        serving = load_serving_config(path)
        record = resolve_model(registry, serving, str(path))
        if not is_llm_format(record.format):
            raise InvalidArgumentError(f"{path}: model: {record.name!r} is not a language model ({record.format})")
        names.append(record.name)
        notes = config_notes(serving, has_gpu=bool(query_gpus()))
        wants_replicas = serving.resources.replica_range() is not None or serving.resources.autoscale is not None
        if wants_replicas and not served_on_ray:
            notes.append("resources: replicas apply on Ray Serve (add --ray or --replicas); serving one here")
        for note in notes:
            console.print(f"note: {path}: {note}", highlight=False)
    return names


def _announce(ports: BoundPorts, loaded: list[ModelVersion], workers: int = 1) -> None:
    models = ",".join(record.ref for record in loaded)
    grpc_text = f"grpc={ports.grpc}" if ports.grpc is not None else "grpc=off"
    print(f"listening http={ports.http} {grpc_text} models={models} workers={workers}", flush=True)


def _plan_in_child(names: list[str], runtime: str | None, home: Path) -> None:
    """Measure in a short-lived child, so that this process loads only the runtimes it serves with (none
    under ``--workers N`` or Ray, where it only supervises): a process that had run OpenVINO's
    candidates crashed at exit after SIGTERM (SIGSEGV in native teardown, about 1 run in 3), even
    serving with onnxruntime. The plans land in the registry as usual."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        failure = pool.apply(_plan_quietly, (names, runtime, home))
    if failure is not None:
        raise InvalidArgumentError(failure)


def _plan_quietly(names: list[str], runtime: str | None, home: Path) -> str | None:
    """:func:`_plan` in a child process (on the registry at ``home``): the failure's message (one line), or None."""
    try:
        registry = context.registry()
        if home != registry.home:  # a Triton repository's own registry
            registry = ModelRegistry(home, registry.store.cipher, registry.audit, registry.actor)
        _plan(registry, names, runtime)
    except MCPError as exc:
        return str(exc)
    finally:
        sys.stdout.flush()
    return None


def _plan(registry: ModelRegistry, names: list[str], runtime: str | None = None) -> None:
    """Measure (or reuse) each model's plan up front, so workers start from the stored plan."""
    orchestrator = PolicyOrchestrator(registry, runtime=runtime)
    for model in names:
        record = registry.resolve(model)
        if is_llm_format(record.format):  # its generation engine's plan, when its contract has a generation section
            _plan_generation(registry, record)
            continue
        if registry.store.is_encrypted(record.digest):
            console.print(f"plan for {model}: stored or default (encrypted at rest: not measured)", highlight=False)
            continue
        stored = orchestrator.ensure_plan(record, trigger="serve")
        console.print(f"plan for {model}: {stored.plan.describe()}", highlight=False)


def _plan_generation(registry: ModelRegistry, record: ModelVersion) -> None:
    decision, measured = ensure_generation_plan(registry, record)
    if decision is None:
        return
    if decision.chosen is None:
        raise NoFeasibleGenerationPlanError(f"{record.ref}: {decision.reason}")
    how = f"measured in {decision.planning_s:.0f} s" if measured else f"stored {decision.time:%Y-%m-%d %H:%M:%S}"
    print(
        f"plan for {record.name}: {decision.chosen.plan.describe()}: {decision.reason} ({how})", flush=True
    )  # one line, never wrapped
