"""The HTTP server's assembly: the KServe v2 routes (v2.py), the OpenAI API (openai/), Triton's generate
extension (generate.py), middleware (Host and cross-site guard, switched-off API groups, auth, gzip) and
the error handlers, as one Starlette app."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import MCPError, hide_in_messages
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.auth import BearerAuthMiddleware
from mcp2026ai.server.http.direct import DirectInfer
from mcp2026ai.server.http.errors import error_response, plain_error, unexpected_error
from mcp2026ai.server.http.generate import generate_routes
from mcp2026ai.server.http.manage import management_routes
from mcp2026ai.server.http.openai import openai_routes
from mcp2026ai.server.http.openai.batch.routes import BatchEndpoints, batch_routes
from mcp2026ai.server.http.openapi import openapi_routes
from mcp2026ai.server.http.probes import probe_routes
from mcp2026ai.server.http.restricted import DisabledApis
from mcp2026ai.server.http.shutdown_cancel import AnswerShutdownCancels
from mcp2026ai.server.http.site_guard import SiteGuard, allowed_host_patterns, site_guard
from mcp2026ai.server.http.ui import ui_routes
from mcp2026ai.server.http.v2 import HttpEndpoints, v2_routes
from mcp2026ai.server.statistics import ServerStatistics

GZIP_MINIMUM_BYTES = 1024
"""Smaller responses go uncompressed: gzip would cost more CPU than the bytes it saves."""


async def _domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MCPError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = "not found" if exc.status_code == 404 else str(exc.detail)
    return plain_error(f"{message}: {request.method} {request.url.path}", exc.status_code)


async def _unexpected_error(request: Request, exc: Exception) -> Response:
    return unexpected_error(request.method, request.url.path, exc)


def _middleware(config: ServerConfig) -> list[Middleware]:
    """Foreign Host names and cross-site state changes refused first (site_guard.py), then the API
    groups switched off (--disable-api), bearer-token authentication when enabled, and responses
    gzip-compressed for clients that accept it (tritonclient's response_compression)."""
    guard = Middleware(SiteGuard, allowed_hosts=allowed_host_patterns(config))
    restricted = [Middleware(DisabledApis, disabled=config.disabled_apis)] if config.disabled_apis else []
    compression = Middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES)
    authenticator = config.security.authenticator()
    auth = [Middleware(BearerAuthMiddleware, authenticator=authenticator)] if authenticator else []
    return [guard, *restricted, *auth, compression]


def build_http_app(plane: DataPlane, config: ServerConfig, statistics: ServerStatistics | None = None) -> Starlette:
    """The whole HTTP API as a Starlette app (what Ray Serve mounts)."""
    return _starlette_app(HttpEndpoints(plane, config, statistics or ServerStatistics(plane)), plane, config)


def build_http_server_app(plane: DataPlane, config: ServerConfig, statistics: ServerStatistics) -> ASGIApp:
    """What ``mcp serve`` runs: v2 inference on the direct route (server/http/direct.py), the rest in Starlette."""
    endpoints = HttpEndpoints(plane, config, statistics)
    app = _starlette_app(endpoints, plane, config)
    direct = DirectInfer(app, endpoints.infer, config.security.authenticator(), GZIP_MINIMUM_BYTES, site_guard(config))
    return AnswerShutdownCancels(direct)


def _starlette_app(endpoints: HttpEndpoints, plane: DataPlane, config: ServerConfig) -> Starlette:
    batches = BatchEndpoints(plane, config, endpoints.bodies)
    home = plane.models.registry.home
    for shown in {str(home), str(home.resolve())}:  # no answer shows the server's home
        hide_in_messages(shown, "$MCP_HOME")
    app = Starlette(
        routes=[
            *v2_routes(endpoints),
            *openai_routes(plane, config, endpoints.bodies),
            *generate_routes(plane, config, endpoints.bodies),
            *ui_routes(plane, config),
            *probe_routes(plane),
            *openapi_routes(),
            *management_routes(plane, config, endpoints.bodies),
            *batch_routes(batches),
        ],
        middleware=_middleware(config),
        exception_handlers={MCPError: _domain_error, HTTPException: _http_error, Exception: _unexpected_error},
    )
    app.router.redirect_slashes = False  # '/v2/models/m/' is an unknown path (JSON 404), not a redirect
    batches.attach(app.router)  # batch lines reach the route handlers synchronous calls reach
    return app
