"""``mcp serve --replicas N``: the data plane as a Ray Serve deployment.

Each replica is a Ray actor that builds the same HTTP application ``mcp serve`` runs (v2 routes,
``/v1/infer``, metrics), with its own served models (loaded with their stored plans), dynamic
batcher, SLA-class queues and registry sync; Ray Serve spreads requests over the replicas and replaces
a replica that dies. Ray's proxy hands each request to a front deployment on the head node
(:mod:`mcp2026ai.deploy.ray_front`), which relays it to a replica and sends it again to another one
if its replica dies before answering, so a killed replica or node loses no request.

With the local stores, the registry (``MCP_HOME``) must be readable at the same path on every node: on
one machine it is; on a cluster, mount it or bake it into the image (docs/deploy.md). With shared
stores (``MCP_CATALOG_URL`` and ``MCP_ARTIFACT_URL``: docs/registry-backends.md) nothing is shared on
disk: each replica works in a scratch directory of its own on its node
(:mod:`mcp2026ai.deploy.ray_replica`) and reads the stores the driver names.

Autoscaling follows the contracts' ``resources`` (``replicas: {min, max}``, ``min_replicas``,
``autoscale``) unless ``--replicas`` fixes the count. gRPC is not proxied by Ray here: clients of a
Ray deployment use HTTP.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.types import Message

from mcp2026ai.app import build_plane, load_models, serving_sync
from mcp2026ai.contract import AutoscaleSpec, InferenceContract, ReplicaRange
from mcp2026ai.deploy.ray_front import HEAD_NODE_RESOURCE, HttpFront, front_options
from mcp2026ai.deploy.ray_relay import RelayedRequest, relay, relay_whole
from mcp2026ai.deploy.ray_replica import (
    ReplicaHeader,
    ReplicaSecrets,
    forwarded_env,
    node_audit_log,
    replica_identity,
    replica_secrets,
    scratch_home,
)
from mcp2026ai.deploy.ray_statistics import ReplicaStatistics, find_board, start_board
from mcp2026ai.errors import InvalidArgumentError, UnavailableError
from mcp2026ai.extras import require
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.stores import open_registry, shares_every_store
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.app import build_http_app
from mcp2026ai.serving.generation_configs import GenerationConfigWatcher
from mcp2026ai.serving.llm_config import load_serving_config
from mcp2026ai.settings import load_settings

log = logging.getLogger(__name__)

APP_NAME = "mcp2026ai"
DEPLOYMENT_NAME = "DataPlaneReplica"
_held: dict[str, Any] = {}
"""Handles the driver keeps while it serves (the statistics board: deploy/ray_statistics.py)."""


class RayServeOptions(BaseModel):
    """How ``mcp serve --replicas`` runs on Ray."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replicas: int | None = Field(None, ge=1, le=1024, description="Fixed replica count; None: the contracts decide.")
    address: str | None = Field(
        None, description="An existing Ray cluster (ray://host:10001 or auto); None starts one."
    )
    num_cpus: float = Field(1.0, gt=0, description="CPUs Ray reserves for each replica.")
    failover: bool = Field(
        True,
        description="A front deployment on the head node relays each request and sends it again to another "
        "replica when its replica dies before answering (deploy/ray_front.py); False: Ray's proxy alone.",
    )


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
    """One Ray Serve replica: the registry at ``home`` (None: shared stores, a scratch directory of its
    own), ``names`` loaded, the HTTP app in front.

    Ray builds it in its own process: ``__serve_build_asgi_app__`` returns the app, whose lifespan
    loads the models and starts the registry sync (and drains and unloads on shutdown).
    """

    def __init__(
        self, home: str | None, names: list[str], config_json: str, secrets: ReplicaSecrets | None = None
    ) -> None:
        if secrets is not None:  # shared stores: the secret settings, never in the runtime environment
            secrets.apply(os.environ)
        self.config = ServerConfig.model_validate_json(config_json)
        self.names = names
        self.scratch: Path | None = None
        if home is None:  # shared stores: a directory of this replica's own, on its node
            self.scratch = registry_home = scratch_home()
            security = self.config.security.model_copy(update={"audit_log": node_audit_log(registry_home)})
            self.config = self.config.model_copy(update={"security": security})
        else:
            registry_home = Path(home)
        self.plane = build_plane(open_registry(home=registry_home), names, self.config)

    def __serve_build_asgi_app__(self) -> Starlette:
        identity = replica_identity()
        self.statistics = ReplicaStatistics(self.plane, identity, find_board(APP_NAME))
        app = build_http_app(self.plane, self.config, self.statistics)
        app.router.lifespan_context = self._lifespan
        app.add_middleware(ReplicaHeader, identity=identity)
        self.http_app = app  # (the ingress wrapper Ray adds has a read-only `app`)
        return app

    async def relay(self, request: RelayedRequest) -> AsyncIterator[list[Message]]:
        """A request the front relays (deploy/ray_front.py), served by this replica's app in process."""
        async for part in relay(self.http_app, request):
            yield part

    async def relay_whole(self, request: RelayedRequest) -> list[Message]:
        """The same, answered in one call (a request whose answer is not a stream)."""
        return await relay_whole(self.http_app, request)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        await load_models(self.plane, self.names, self.config)
        configs = GenerationConfigWatcher(self.plane.llms, self.config.generation_configs)
        configs.start()
        sync = serving_sync(self.plane, self.config)
        sync.start()
        await self.statistics.start()
        try:
            yield
        finally:
            await self.statistics.stop()
            await configs.stop()
            await sync.stop()
            self.plane.stop_accepting()
            await self.plane.shutdown(self.config.drain_timeout_s)
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)

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
    _held["statistics board"] = start_board(APP_NAME, HEAD_NODE_RESOURCE)
    contracts = [registry.resolve(name).contract for name in names]
    # an mcp-config.yaml's resources (the seed's min_replicas, autoscale) scale the replicas too
    contracts += [
        InferenceContract(resources=load_serving_config(path).resources) for path in config.generation_configs
    ]
    chosen = deployment_options(options, contracts)
    replica_config = config.model_copy(update={"grpc_port": None, "reuse_port": False, "peer_dir": None})
    home, actor_options = replica_placement(chosen["ray_actor_options"], registry)
    deployment = serve.deployment(name=DEPLOYMENT_NAME, **{**chosen, "ray_actor_options": actor_options})(
        serve.ingress()(DataPlaneReplica)
    )
    secrets = replica_secrets(os.environ) if home is None else None
    app = deployment.bind(home, names, replica_config.model_dump_json(), secrets)
    if options.failover:
        front = serve.deployment(**front_options(chosen["max_ongoing_requests"] * max_replicas(chosen)))(HttpFront)
        app = front.bind(app, config.max_request_bytes, config.max_inflight_body_bytes, config.body_timeout_s)
    serve.run(app, name=APP_NAME, route_prefix="/", blocking=False)
    return chosen


def max_replicas(chosen: dict[str, Any]) -> int:
    scaling = chosen.get("autoscaling_config")
    return int(scaling["max_replicas"] if scaling else chosen["num_replicas"])


def replica_placement(actor_options: dict[str, Any], registry: ModelRegistry) -> tuple[str | None, dict[str, Any]]:
    """The registry directory replicas open (None on shared stores: each its own scratch directory) and
    their actor options (on shared stores, a runtime environment with the stores' plain settings and the
    names of the secret ones: their values go to the replicas' constructor, see ``ReplicaSecrets``)."""
    if not shares_every_store(load_settings()):
        return str(registry.home), actor_options
    return None, {**actor_options, "runtime_env": {"env_vars": forwarded_env(os.environ)}}


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
    _held.clear()
    ray.shutdown()
