"""The probe paths other model servers offer, as aliases of ours:

- ``GET /health`` (TGI, vLLM) and ``GET /ping`` (SageMaker): 200 ``{"status": "ok"}`` when the server
  is ready (``/v2/health/ready``), 503 ``{"status": "unavailable"}`` while loading or draining. Open,
  like the v2 probes: load balancers and orchestrators carry no token.
- ``GET /version`` (vLLM): ``{"name": ..., "version": ...}``, as ``GET /v2`` reports them; ``infer``
  scope with ``--auth``, like ``/v2``.

None reads a body or touches the disk.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.protocol import triton

OPEN_PROBE_PATHS = frozenset({"/health", "/ping"})


class ProbeEndpoints:
    def __init__(self, plane: DataPlane) -> None:
        self.plane = plane

    async def health(self, request: Request) -> Response:
        if self.plane.ready():
            return JSONResponse({"status": "ok"})
        return JSONResponse({"status": "unavailable"}, 503)

    async def version(self, request: Request) -> Response:
        metadata = triton.server_metadata()
        return JSONResponse({"name": metadata["name"], "version": metadata["version"]})


def probe_routes(plane: DataPlane) -> list[Route]:
    endpoints = ProbeEndpoints(plane)
    return [
        Route("/health", endpoints.health, methods=["GET"]),
        Route("/ping", endpoints.health, methods=["GET"]),
        Route("/version", endpoints.version, methods=["GET"]),
    ]
