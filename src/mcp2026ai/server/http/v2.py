"""The KServe v2 HTTP/REST routes (plus /v1/infer, /healthz and /metrics): each handler decodes, calls
the data plane, encodes."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import InvalidInputError, MCPError, ModelNotReadyError
from mcp2026ai.observability import metrics
from mcp2026ai.observability.requests import EdgeCodes, observe_inference
from mcp2026ai.protocol import triton
from mcp2026ai.protocol.v2_json import HEADER_LENGTH, decode_request, encode_response, parse_json
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.auth import caller_details, principal_of
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.errors import error_response
from mcp2026ai.server.http.image import image_request, predictions, requested_model
from mcp2026ai.server.statistics import ServerStatistics

PROTOCOL = "http"
EDGE_CODES = EdgeCodes(ok="200", unexpected="500", cancelled="499")


def json_response(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status, media_type="application/json")


class HttpEndpoints:
    """Route handlers; each one decodes, calls the data plane, encodes."""

    def __init__(self, plane: DataPlane, config: ServerConfig, statistics: ServerStatistics) -> None:
        self.plane = plane
        self.config = config
        self.statistics = statistics
        self.bodies = BodyBudget(config.max_inflight_body_bytes, config.body_timeout_s)

    async def live(self, request: Request) -> Response:
        return json_response({"live": True})

    async def ready(self, request: Request) -> Response:
        ready = self.plane.ready()
        return json_response({"ready": ready}, 200 if ready else 503)

    async def healthz(self, request: Request) -> Response:
        return json_response({"status": "ok", "ready": self.plane.ready()})

    async def server_metadata(self, request: Request) -> Response:
        return json_response(triton.server_metadata())

    async def model_metadata(self, request: Request) -> Response:
        name, version = _model_ref(request)
        return json_response(triton.model_metadata(self.plane.describe(name, version)))

    async def model_ready(self, request: Request) -> Response:
        name, version = _model_ref(request)
        if self.plane.model_ready(name, version):  # unknown -> 404
            return json_response({"name": name, "ready": True})
        raise ModelNotReadyError(f"model {name!r} is not ready")

    async def model_package(self, request: Request) -> Response:
        """The record and signatures of a served version (``pull`` scope), for edge devices."""
        name, version = _model_ref(request)
        return Response(self.plane.model_package(name, version).model_dump_json(), media_type="application/json")

    async def model_artifact(self, request: Request) -> Response:
        """The artifact's bytes; the ETag is its sha256, so a device holding it gets a 304."""
        name, version = _model_ref(request)
        record = self.plane.model_record(name, version)
        etag = f'"{record.digest}"'
        headers = {"ETag": etag, "X-Model-Version": record.version}
        if etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        record, data = await self.plane.model_artifact(name, version)
        return Response(data, media_type="application/octet-stream", headers=headers)

    async def model_config(self, request: Request) -> Response:
        name, version = _model_ref(request)
        return json_response(triton.model_config(self.plane.describe(name, version)))

    async def model_stats(self, request: Request) -> Response:
        name = request.path_params.get("model")
        stats = await self.statistics.model_statistics(name, request.path_params.get("version"))
        return json_response({"model_stats": stats})

    async def repository_index(self, request: Request) -> Response:
        return json_response(self.plane.repository.index())

    async def _json_object(self, request: Request) -> dict[str, Any]:
        """A JSON object body (empty: {}), read within ``max_json_bytes``, the body budget and timeout."""
        async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
            return _dict_body(parse_json(raw)) if raw.strip() else {}

    async def repository_load(self, request: Request) -> Response:
        body = await self._json_object(request)
        parameters = _dict_body(body.get("parameters") or {})
        model = request.path_params["model"]
        await self.plane.repository.load(model, principal_of(request).actor, caller_details(request), parameters)
        return json_response({})

    async def repository_unload(self, request: Request) -> Response:
        await self.plane.repository.unload(
            request.path_params["model"], principal_of(request).actor, caller_details(request)
        )
        return json_response({})

    async def trace_setting(self, request: Request) -> Response:
        model = request.path_params.get("model")
        if request.method == "POST":
            changes = await self._json_object(request)
            return json_response(self.plane.extensions.update_trace_settings(changes, model))
        return json_response(self.plane.extensions.trace_settings(model))

    async def logging_settings(self, request: Request) -> Response:
        if request.method == "POST":
            changes = await self._json_object(request)
            return json_response(self.plane.extensions.update_log_settings(changes))
        return json_response(self.plane.extensions.log_settings())

    async def shm_status(self, request: Request) -> Response:
        region = request.path_params.get("region")
        if request.url.path.startswith("/v2/cudasharedmemory"):
            return json_response(self.plane.extensions.cuda_shm_status(region))
        return json_response(self.plane.extensions.system_shm_status(region))

    async def shm_register(self, request: Request) -> Response:
        region = request.path_params["region"]
        if request.url.path.startswith("/v2/cudasharedmemory"):
            self.plane.extensions.register_cuda_shm(region)
        document = await self._json_object(request)
        key, offset, size = document.get("key"), document.get("offset", 0), document.get("byte_size")
        if not isinstance(key, str) or not isinstance(offset, int) or not isinstance(size, int):
            raise InvalidInputError("register needs a string 'key' and integer 'offset' and 'byte_size'")
        self.plane.extensions.register_system_shm(region, key, offset, size)
        return json_response({})

    async def shm_unregister(self, request: Request) -> Response:
        region = request.path_params.get("region")
        if request.url.path.startswith("/v2/cudasharedmemory"):
            self.plane.extensions.unregister_cuda_shm(region)
        else:
            self.plane.extensions.unregister_system_shm(region)
        return json_response({})

    async def metrics(self, request: Request) -> Response:
        """Encoded on a worker thread: a scrape reads /proc (the process collector lists every open
        descriptor, one per connection) and formats every series: about 11 ms with 8,000 connections open
        under load, during which the event loop, had it done this itself, answered nothing."""
        accept = request.headers.get("accept", "")
        body, content_type = await asyncio.to_thread(metrics.scrape, accept, self.config.metrics_compat)
        return Response(body, headers={"Content-Type": content_type})

    async def infer(self, request: Request) -> Response:
        name, version = _model_ref(request)
        headers = dict(request.headers)
        with observe_inference(
            PROTOCOL, name, headers, self.plane.is_served, EDGE_CODES, self.plane.serves_version
        ) as seen:
            seen.version = version or ""
            try:
                self.plane.inference.check_admission(name, version, headers.get("x-sla-class"))
                async with read_body(request, self.config.max_request_bytes, self.bodies) as body:
                    length = headers.get(HEADER_LENGTH)
                    regions = self.plane.extensions.shared_memory
                    decoded = decode_request(name, version, body, length, headers, self.config.max_json_bytes, regions)
                    response = await self.plane.inference.infer(decoded)
                    seen.answered(response)
                    payload, header_length = encode_response(response, decoded, regions)
            except MCPError as exc:
                error = error_response(exc)
                seen.fail(str(error.status_code), exc)
                return error
        if header_length is None:
            return Response(payload, media_type="application/json")
        return Response(
            payload,
            media_type="application/octet-stream",
            headers={"Inference-Header-Content-Length": str(header_length)},
        )

    async def legacy_infer(self, request: Request) -> Response:
        """POST /v1/infer (an image in, top-k classes out): counted and traced like a v2 request."""
        headers = dict(request.headers)
        async with read_body(
            request, min(self.config.max_request_bytes, self.config.max_json_bytes), self.bodies
        ) as body:
            document = parse_json(body)
        name = requested_model(self.plane, document, request.query_params.get("model"))
        with observe_inference(
            PROTOCOL, name, headers, self.plane.is_served, EDGE_CODES, self.plane.serves_version
        ) as seen:
            try:
                image = image_request(self.plane, document, name, headers)
                seen.version = image.request.version or ""
                response = await self.plane.inference.infer(image.request)
                seen.answered(response)
                return json_response(predictions(image, response))
            except MCPError as exc:
                error = error_response(exc)
                seen.fail(str(error.status_code), exc)
                return error


def _shared_memory_routes(endpoints: HttpEndpoints) -> list[Route]:
    routes = []
    for kind in ("systemsharedmemory", "cudasharedmemory"):
        base = f"/v2/{kind}"
        routes += [
            Route(f"{base}/status", endpoints.shm_status, methods=["GET"]),
            Route(f"{base}/region/{{region}}/status", endpoints.shm_status, methods=["GET"]),
            Route(f"{base}/region/{{region}}/register", endpoints.shm_register, methods=["POST"]),
            Route(f"{base}/unregister", endpoints.shm_unregister, methods=["POST"]),
            Route(f"{base}/region/{{region}}/unregister", endpoints.shm_unregister, methods=["POST"]),
        ]
    return routes


def _dict_body(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise InvalidInputError("request body must be a JSON object of settings")
    return document


def _model_ref(request: Request) -> tuple[str, str | None]:
    return request.path_params["model"], request.path_params.get("version")


def v2_routes(endpoints: HttpEndpoints) -> list[Route]:
    model_routes = [
        ("", endpoints.model_metadata, ["GET"]),
        ("/ready", endpoints.model_ready, ["GET"]),
        ("/config", endpoints.model_config, ["GET"]),
        ("/stats", endpoints.model_stats, ["GET"]),
        ("/infer", endpoints.infer, ["POST"]),
        ("/package", endpoints.model_package, ["GET"]),
        ("/artifact", endpoints.model_artifact, ["GET"]),
    ]
    routes = [
        Route("/v2/health/live", endpoints.live, methods=["GET"]),
        Route("/v2/health/ready", endpoints.ready, methods=["GET"]),
        Route("/v2", endpoints.server_metadata, methods=["GET"]),
        Route("/v2/models/stats", endpoints.model_stats, methods=["GET"]),
        Route("/v2/repository/index", endpoints.repository_index, methods=["POST", "GET"]),
        Route("/v2/trace/setting", endpoints.trace_setting, methods=["GET", "POST"]),
        Route("/v2/models/{model}/trace/setting", endpoints.trace_setting, methods=["GET", "POST"]),
        Route("/v2/logging", endpoints.logging_settings, methods=["GET", "POST"]),
        *_shared_memory_routes(endpoints),
        Route("/v2/repository/models/{model}/load", endpoints.repository_load, methods=["POST"]),
        Route("/v2/repository/models/{model}/unload", endpoints.repository_unload, methods=["POST"]),
        Route("/healthz", endpoints.healthz, methods=["GET"]),
        Route("/metrics", endpoints.metrics, methods=["GET"]),
        Route("/v1/infer", endpoints.legacy_infer, methods=["POST"]),
    ]
    for suffix, handler, methods in model_routes:
        routes.append(Route(f"/v2/models/{{model}}/versions/{{version}}{suffix}", handler, methods=methods))
        routes.append(Route(f"/v2/models/{{model}}{suffix}", handler, methods=methods))
    return routes
