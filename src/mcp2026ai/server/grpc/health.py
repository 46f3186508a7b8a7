"""The standard gRPC health service (``grpc.health.v1.Health``) and server reflection.

What a probe asks for, by service name:

- ``""`` (the server) and ``inference.GRPCInferenceService``: SERVING when the server is ready (the
  gate open and every default model loaded), NOT_SERVING otherwise;
- a model's name: SERVING while that model is loaded and ready and the gate is open. A name that was
  never served is NOT_FOUND (Check) or SERVICE_UNKNOWN (Watch); one that was served and is unloaded
  reads NOT_SERVING.

From the moment shutdown starts every service reads NOT_SERVING, for good (:meth:`PlaneHealth.drain`),
so Kubernetes' gRPC probes and ``grpc_health_probe`` take the pod out before its listeners close.
Check answers from the data plane at the moment it is asked; Watch streams learn of changes within
:data:`REFRESH_S`.

Reflection (grpcurl's ``list`` and ``describe``) covers the inference service, health and reflection
itself. Scopes, with ``--auth``: health is open (probes carry no token), reflection needs ``infer``
(server/grpc/auth.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from tritonclient.grpc import service_pb2 as pb

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import NotFoundError

INFERENCE_SERVICE: str = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"].full_name
HEALTH_SERVICE: str = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
REFRESH_S = 1.0
"""How often Watch streams' statuses are brought up to date with the data plane."""

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def service_statuses(plane: DataPlane) -> dict[str, bool]:
    """Whether each service name is serving now: the server, the inference service and every served model."""
    ready = plane.ready()
    statuses = {"": ready, INFERENCE_SERVICE: ready}
    for name in [*plane.served_names(), *plane.llms.names()]:
        statuses[name] = plane.gate.open and model_serving(plane, name)
    return statuses


def model_serving(plane: DataPlane, name: str) -> bool:
    try:
        return plane.model_ready(name)
    except NotFoundError:
        return False


class PlaneHealth(health.aio.HealthServicer):  # type: ignore[misc]
    """grpcio-health-checking's servicer, its statuses taken from the data plane."""

    def __init__(self, plane: DataPlane) -> None:
        super().__init__()
        self.plane = plane
        self._refresher: asyncio.Task[None] | None = None

    async def Check(self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext) -> Any:
        await self.refresh()
        return await super().Check(request, context)

    async def refresh(self) -> None:
        """Statuses from the data plane; a model served before and gone now reads NOT_SERVING."""
        current = service_statuses(self.plane)
        for service in set(self._server_status) | set(current):
            await self.set(service, SERVING if current.get(service, False) else NOT_SERVING)

    def start(self) -> None:
        self._refresher = asyncio.create_task(self._refresh_forever())

    async def _refresh_forever(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(REFRESH_S)

    async def drain(self) -> None:
        """Shutdown began: every service NOT_SERVING from now on."""
        await self.enter_graceful_shutdown()
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher


def add_health_and_reflection(plane: DataPlane, server: grpc.aio.Server) -> PlaneHealth:
    """Serve health and reflection on ``server`` (before it starts); the health servicer, to start and drain."""
    servicer = PlaneHealth(plane)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    reflection.enable_server_reflection((INFERENCE_SERVICE, HEALTH_SERVICE, reflection.SERVICE_NAME), server)
    return servicer
