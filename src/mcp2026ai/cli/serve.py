"""``mcp serve``: serve registered models over KServe v2 HTTP and gRPC."""

from __future__ import annotations

import logging
import multiprocessing
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from mcp2026ai.app import register_paths, serve_blocking
from mcp2026ai.cli import context
from mcp2026ai.cli.output import console
from mcp2026ai.cli.policy_generation import NoFeasibleGenerationPlanError
from mcp2026ai.cli.serve_config import dump, read_config_files, server_config
from mcp2026ai.cli.serve_flags import command_signature, given_on_command_line
from mcp2026ai.cli.serve_limits import parse_limits
from mcp2026ai.cli.serve_security import check_signatures, serving_security
from mcp2026ai.cli.triton import repository_registry
from mcp2026ai.deploy import ray as ray_deployment
from mcp2026ai.deploy.ray import RayServeOptions
from mcp2026ai.deploy.workers import run_workers
from mcp2026ai.errors import InvalidArgumentError, MCPError
from mcp2026ai.observability.export import check_trace_export
from mcp2026ai.policy.generation import ensure_generation_plan
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.probe import query_gpus
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import LORA_FORMAT, is_llm_format
from mcp2026ai.registry.pipelines import is_pipeline, pipeline_model_steps
from mcp2026ai.runtime.catalog import backend_class
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.site_guard import check_exposure
from mcp2026ai.server.lifecycle import BoundPorts, ensure_ports_free
from mcp2026ai.server.process_exit import arm_exit_watchdog, exit_grace_s
from mcp2026ai.serving.llm_config import config_notes, load_serving_config, resolve_model
from mcp2026ai.serving.python_models import is_python_model

MODELS, DEPLOYMENT, SECURITY, LLM = "Models and plans", "Deployment", "Security", "Language models"


def serve(
    ctx: typer.Context,
    name: Annotated[
        list[str] | None,
        typer.Option(help="Registered model to serve; repeatable. Default: all.", rich_help_panel=MODELS),
    ] = None,
    model_path: Annotated[
        list[Path] | None,
        typer.Option(
            help="Model file to register (under its file stem) and serve; repeatable.", rich_help_panel=MODELS
        ),
    ] = None,
    model_repository: Annotated[
        Path | None,
        typer.Option(
            help="Serve a Triton model repository as it stands (<name>/config.pbtxt, <name>/<N>/model.onnx); "
            "alone, in one process.",
            rich_help_panel=MODELS,
        ),
    ] = None,
    config_files: Annotated[
        list[Path] | None,
        typer.Option(
            "--config",
            help="A server configuration (YAML of ServerConfig's keys; flags override it), or a language model's "
            "mcp-config.yaml (generation defaults, resources: serves the model it names and re-applies the file "
            "when it changes); repeatable.",
            rich_help_panel=MODELS,
        ),
    ] = None,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config", help="Print the effective server configuration as YAML and exit.", rich_help_panel=MODELS
        ),
    ] = False,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="Server processes sharing the ports.", rich_help_panel=DEPLOYMENT)
    ] = 1,
    replicas: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1024,
            help="Ray Serve replicas (extra [ray]); default: the contract's range, if any.",
            rich_help_panel=DEPLOYMENT,
        ),
    ] = None,
    ray: Annotated[
        bool,
        typer.Option(
            help="Serve through Ray Serve even without --replicas (contract scaling).", rich_help_panel=DEPLOYMENT
        ),
    ] = False,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="Existing Ray cluster for --replicas (e.g. auto, ray://host:10001).", rich_help_panel=DEPLOYMENT
        ),
    ] = None,
    ray_failover: Annotated[
        bool,
        typer.Option(
            help="On Ray: a front on the head node sends a request again to another replica when its replica "
            "dies before answering (--no-ray-failover: Ray's proxy alone, one hop less).",
            rich_help_panel=DEPLOYMENT,
        ),
    ] = True,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            help="Language models: a per-request limit as NAME=VALUE (max_messages, max_prompt_chars, max_tokens, "
            "default_max_tokens, max_n, max_top_logprobs, max_stop_strings, max_stop_chars, max_body_bytes, "
            "max_prompts); "
            "repeatable. See docs/llm-reliability.md.",
            rich_help_panel=LLM,
        ),
    ] = None,
    require_signed: Annotated[
        bool,
        typer.Option(
            help="Load only versions signed by a trusted key; refuse unsigned or tampered ones.",
            rich_help_panel=SECURITY,
        ),
    ] = False,
    trusted_key: Annotated[
        list[Path] | None,
        typer.Option(
            help="Extra trusted public key file (with --require-signed); repeatable.", rich_help_panel=SECURITY
        ),
    ] = None,
    auth: Annotated[
        bool,
        typer.Option(
            help="Require bearer tokens (`mcp token create`) except on health probes.", rich_help_panel=SECURITY
        ),
    ] = False,
    tls_cert: Annotated[
        Path | None,
        typer.Option(help="PEM certificate chain: serve HTTPS and gRPC over TLS.", rich_help_panel=SECURITY),
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option(help="PEM private key of --tls-cert.", rich_help_panel=SECURITY)
    ] = None,
    tls_ca: Annotated[
        Path | None,
        typer.Option(help="PEM CA bundle that client certificates must chain to.", rich_help_panel=SECURITY),
    ] = None,
    tls_require_client_cert: Annotated[
        bool,
        typer.Option(help="Mutual TLS: refuse clients without a certificate from --tls-ca.", rich_help_panel=SECURITY),
    ] = False,
    **options: Any,
) -> None:
    """Serve models; Ctrl-C or SIGTERM drains in-flight requests and unloads.

    Options from the server's configuration (ServerConfig) are generated from it (cli/serve_flags.py)."""
    given = given_on_command_line(ctx)
    files = read_config_files(list(config_files or []))
    security = serving_security(
        require_signed, trusted_key or [], auth, tls_cert, tls_key, tls_ca, tls_require_client_cert
    )
    security_given = any(given(flag) for flag in SECURITY_FLAGS)
    generation_configs = [Path(path) for path in files.document.get("generation_configs", [])] + files.language_models
    config = server_config(
        options,
        given,
        files,
        {
            "security": (security, security_given),
            "generation_limits": (parse_limits(list(limit or [])), given("limit")),
            "generation_configs": (generation_configs, bool(files.language_models)),
        },
    )
    if print_config:
        print(yaml.safe_dump(dump(config), sort_keys=False), end="", flush=True)
        return
    _serve(
        config,
        list(name or []),
        list(model_path or []),
        model_repository,
        workers,
        RayServeOptions(replicas=replicas, address=ray_address, failover=ray_failover),
        ray,
    )


serve.__signature__ = command_signature(serve)  # type: ignore[attr-defined]
SECURITY_FLAGS = ("require_signed", "trusted_key", "auth", "tls_cert", "tls_key", "tls_ca", "tls_require_client_cert")


def _serve(
    config: ServerConfig,
    name: list[str],
    model_path: list[Path],
    model_repository: Path | None,
    workers: int,
    ray_options: RayServeOptions,
    ray: bool,
) -> None:
    logging.basicConfig(level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    check_exposure(config.host, config.security.auth is not None, config.allow_unauthenticated)  # before any work
    if config.runtime is not None:
        backend_class(config.runtime)  # unknown or not installed: one line naming the extra to install
    replicas, serving_config = ray_options.replicas, config.generation_configs
    repository = None
    if model_repository is not None:
        if name or model_path or serving_config or workers > 1 or replicas or ray or ray_options.address:
            raise InvalidArgumentError(
                "--model-repository: serve it alone, in one process (no --name, --model-path, --config, "
                "--workers, --replicas or Ray)"
            )
        registry, repository = repository_registry(model_repository)
    else:
        registry = context.registry()
    names = list(name) + (repository.names if repository else [])
    watched = register_paths(registry, model_path)
    names += list(watched)
    names += serving_config_models(registry, serving_config, served_on_ray=replicas is not None or ray)
    if not names:
        names = registry.model_names()
    if not names:
        raise InvalidArgumentError("nothing to serve: register a model first or pass --model-path")
    check_trace_export(config.traces)
    names = list(dict.fromkeys(names))
    check_signatures(registry, names, config.security)
    on_ray = replicas is not None or ray or ray_options.address is not None
    ensure_ports_free(config)  # before the policy's measurements: a taken port fails in a second, not a minute
    if config.plan_with_policy:  # measured in a child: this process loads only the runtimes it serves with
        _plan_in_child(names, config.runtime, registry.home)
    if on_ray:
        _serve_on_ray(registry, names, config, ray_options)
    elif workers == 1:
        try:
            serve_blocking(registry, names, config, on_ready=_announce, watched=watched, repository=repository)
        finally:  # a Python model's execute that never returns must not hold the process at exit
            arm_exit_watchdog(exit_grace_s(config.drain_timeout_s))
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
        if record.format == LORA_FORMAT:  # a LoRA adapter runs on its base's engine and plan
            continue
        if is_llm_format(record.format):  # its generation engine's plan, when its contract has a generation section
            _plan_generation(registry, record)
            continue
        if is_pipeline(record):  # its model steps' plans (`mcp policy plan` splits the cores between them)
            for step, step_record in pipeline_model_steps(registry, record):
                stored = orchestrator.ensure_plan(step_record, trigger="serve")
                console.print(f"plan for {model} step {step}: {stored.plan.describe()}", highlight=False)
            continue
        if is_python_model(record):  # a Triton python model runs its own code: nothing to measure
            console.print(f"plan for {model}: none (Triton python model)", highlight=False)
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
