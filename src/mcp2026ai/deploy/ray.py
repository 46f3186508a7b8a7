"""``mcp serve --replicas N``: the data plane as a Ray Serve deployment.

Each replica is a Ray actor that builds the same HTTP application ``mcp serve`` runs (v2 routes,
``/v1/infer``, metrics), with its own served models (loaded with their stored plans), dynamic
batcher, SLA-class queues and registry sync; Ray Serve's proxy spreads requests over the replicas
and replaces a replica that dies. The registry (``MCP_HOME``) must be readable at the same path on
every node: on one machine it is; on a cluster, mount it or bake it into the image (docs/deploy.md),
or give every node shared stores (``MCP_CATALOG_URL``, ``MCP_ARTIFACT_URL``: docs/registry-backends.md),
in which case ``MCP_HOME`` is only each node's scratch space.

Autoscaling follows the contracts' ``resources`` (``replicas: {min, max}``, ``min_replicas``,
``autoscale``) unless ``--replicas`` fixes the count. gRPC is not proxied by Ray here: clients of a
Ray deployment use HTTP.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette

from mcp2026ai.app import build_plane, load_models, serving_sync
from mcp2026ai.contract import AutoscaleSpec, InferenceContract, ReplicaRange
from mcp2026ai.errors import InvalidArgumentError, UnavailableError
from mcp2026ai.extras import require
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.stores import open_registry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.app import build_http_app
from mcp2026ai.serving.generation_configs import GenerationConfigWatcher
from mcp2026ai.serving.llm_config import load_serving_config

log = logging.getLogger(__name__)

APP_NAME = "mcp2026ai"
DEPLOYMENT_NAME = "DataPlaneReplica"


class RayServeOptions(BaseModel):
    """How ``mcp serve --replicas`` runs on Ray."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replicas: int | None = Field(None, ge=1, le=1024, description="Fixed replica count; None: the contracts decide.")
    address: str | None = Field(
        None, description="An existing Ray cluster (ray://host:10001 or auto); None starts one."
    )
    num_cpus: float = Field(1.0, gt=0, description="CPUs Ray reserves for each replica.")


def deployment_options(options: RayServeOptions, contracts: list[InferenceContract | None]) -> dict[str, Any]:
    """Ray Serve deployment options: a fixed ``num_replicas``, or an ``autoscaling_config`` from the
    contracts (the widest replica range and the tightest target over the served models)."""
    common: dict[str, Any] = {
        "ray_actor_options": {"num_cpus": options.num_cpus},
        "max_ongoing_requests": 64,
        "graceful_shutdown_wait_loop_s": 0.5,
        "graceful_shutdown_timeout_s": 10.0,
    }
    if options.replicas is not None:
        return {**common, "num_replicas": options.replicas}
    ranges = [r for c in contracts if c is not None and (r := c.resources.replica_range()) is not None]
    scales = [c.resources.autoscale for c in contracts if c is not None and c.resources.autoscale is not None]
    if not ranges and not scales:
        return {**common, "num_replicas": 1}
    span = ReplicaRange(min=max(r.min for r in ranges), max=max(r.max for r in ranges)) if ranges else ReplicaRange()
    if span.min == span.max and not scales:
        return {**common, "num_replicas": span.max}
    return {**common, "autoscaling_config": autoscaling_config(span, scales)}


def autoscaling_config(span: ReplicaRange, scales: list[AutoscaleSpec]) -> dict[str, Any]:
    scale = min(scales, key=lambda s: s.target_ongoing_requests) if scales else AutoscaleSpec()
    if any(s.target_gpu_utilization is not None for s in scales):
        log.warning("autoscale.target_gpu_utilization is ignored: replicas run on CPUs; scaling on ongoing requests")
    return {
        "min_replicas": span.min,
        "initial_replicas": max(span.min, 1),
        "max_replicas": span.max,
        "target_ongoing_requests": scale.target_ongoing_requests,
        "upscale_delay_s": scale.upscale_delay_s,
        "downscale_delay_s": scale.downscale_delay_s,
    }


class DataPlaneReplica:
    """One Ray Serve replica: the registry at ``home``, ``names`` loaded, the HTTP app in front.

    Ray builds it in its own process: ``__serve_build_asgi_app__`` returns the app, whose lifespan
    loads the models and starts the registry sync (and drains and unloads on shutdown).
    """

    def __init__(self, home: str, names: list[str], config_json: str) -> None:
        self.config = ServerConfig.model_validate_json(config_json)
        self.names = names
        self.plane = build_plane(open_registry(home=Path(home)), names, self.config)

    def __serve_build_asgi_app__(self) -> Starlette:
        app = build_http_app(self.plane, self.config)
        app.router.lifespan_context = self._lifespan
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        await load_models(self.plane, self.names)
        configs = GenerationConfigWatcher(self.plane.llms, self.config.generation_configs)
        configs.start()
        sync = serving_sync(self.plane, self.config)
        sync.start()
        try:
            yield
        finally:
            await configs.stop()
            await sync.stop()
            self.plane.stop_accepting()
            await self.plane.shutdown(self.config.drain_timeout_s)

    async def check_health(self) -> None:
        """Ray Serve's replica health check: a replica whose default models are not ready is replaced."""
        if not self.plane.ready():
            raise UnavailableError("models not ready")


def ray_serve() -> Any:
    """Ray Serve, or a one-line install hint."""
    require("ray", "mcp serve --replicas (Ray Serve)", UnavailableError)
    return require("ray.serve", "mcp serve --replicas (Ray Serve)", UnavailableError)


def start(registry: ModelRegistry, names: list[str], config: ServerConfig, options: RayServeOptions) -> dict[str, Any]:
    """Start (or join) Ray, run the deployment, return the deployment options it runs with."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if options.address is None:
        # A cluster of our own, on this machine: Ray's services listen on loopback only (Ray otherwise
        # turns 127.0.0.1 into the machine's routable address, for other nodes to join).
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    serve = ray_serve()
    import ray

    ray.init(address=options.address, namespace=APP_NAME, log_to_driver=False, configure_logging=False)
    if config.http_port == 0:
        raise InvalidArgumentError("--port 0 is not supported with --replicas: Ray Serve's proxy needs a fixed port")
    serve.start(http_options={"host": config.host, "port": config.http_port})
    contracts = [registry.resolve(name).contract for name in names]
    # an mcp-config.yaml's resources (the seed's min_replicas, autoscale) scale the replicas too
    contracts += [
        InferenceContract(resources=load_serving_config(path).resources) for path in config.generation_configs
    ]
    chosen = deployment_options(options, contracts)
    replica_config = config.model_copy(update={"grpc_port": None, "reuse_port": False, "peer_dir": None})
    deployment = serve.deployment(name=DEPLOYMENT_NAME, **chosen)(serve.ingress()(DataPlaneReplica))
    serve.run(
        deployment.bind(str(registry.home), names, replica_config.model_dump_json()),
        name=APP_NAME,
        route_prefix="/",
        blocking=False,
    )
    return chosen


def wait_for_signal() -> None:
    """Block until SIGINT or SIGTERM (Python runs the handlers on the main thread, whichever thread of
    Ray's the kernel delivered the signal to)."""
    stopping = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.set())
    while not stopping.wait(0.5):
        pass


def stop() -> None:
    """Tear the deployment down and disconnect from Ray (a cluster this process started goes with it)."""
    serve = ray_serve()
    import ray

    with contextlib.suppress(Exception):  # best effort on the way out
        serve.shutdown()  # the app, its replicas, the proxies and the controller
    ray.shutdown()
