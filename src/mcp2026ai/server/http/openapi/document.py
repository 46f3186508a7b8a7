"""The OpenAPI 3.1 description of the routes an app serves, built from operations.py's table and the
pydantic models it names (their JSON Schemas become ``components.schemas``), with each operation's
scope as server/http/auth.py enforces it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from mcp2026ai import __version__
from mcp2026ai.server.http.auth import required_scope
from mcp2026ai.server.http.openapi.operations import JSON, SSE, Operation, operations

OPENAPI_VERSION = "3.1.0"
REF_TEMPLATE = "#/components/schemas/{model}"
_PARAMETER = re.compile(r"{([^}:]+)(?::[^}]+)?}")
DESCRIPTION = (
    "mcp2026ai's HTTP API: KServe v2, the OpenAI-compatible /v1 routes, Triton's generate extension, "
    "management, the web console's data and the probes. With `mcp serve --auth` each operation needs a "
    "bearer token with the scope its `x-scope` names (none: open); without --auth every route is open."
)


def served_operations(routes: Iterable[BaseRoute], prefix: str = "") -> list[tuple[str, str]]:
    """(path, method) of every route ``routes`` serve (HEAD aside: Starlette adds it to every GET);
    a static-files mount as ``<mount>/{path}``."""
    served = []
    for route in routes:
        if isinstance(route, Route):
            served += [(prefix + route.path, method) for method in sorted(route.methods or ()) if method != "HEAD"]
        elif isinstance(route, Mount) and isinstance(route.app, StaticFiles):
            served.append((f"{prefix}{route.path}/{{path}}", "GET"))
        elif isinstance(route, Mount):
            served += served_operations(route.routes, prefix + route.path)
    return served


def undescribed(routes: Iterable[BaseRoute]) -> list[tuple[str, str]]:
    """Served (path, method) pairs the table lacks: each is missing from the description."""
    table = operations()
    return [key for key in served_operations(routes) if key not in table]


def openapi_document(routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """The description of ``routes`` (those operations.py describes)."""
    table = operations()
    served = [(key, table[key]) for key in served_operations(routes) if key in table]
    models = sorted({model for _, op in served for model in _models(op)}, key=lambda model: model.__name__)
    refs, schemas = models_json_schema([(model, "validation") for model in models], ref_template=REF_TEMPLATE)
    ref_of = {model: refs[(model, "validation")] for model in models}
    paths: dict[str, dict[str, Any]] = {}
    for (path, method), operation in served:
        paths.setdefault(path, {})[method.lower()] = _operation(path, method, operation, ref_of)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "mcp2026ai", "version": __version__, "description": DESCRIPTION},
        "paths": paths,
        "components": {
            "schemas": schemas.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _models(operation: Operation) -> list[type[BaseModel]]:
    return [model for model in (operation.request, operation.response, operation.error) if model is not None]


def _operation(
    path: str, method: str, operation: Operation, ref_of: dict[type[BaseModel], dict[str, Any]]
) -> dict[str, Any]:
    scope = required_scope(_PARAMETER.sub("x", path), method)
    described: dict[str, Any] = {
        "summary": operation.summary,
        "tags": [operation.tag],
        "operationId": method.lower() + _PARAMETER.sub(r"_\1", path).replace("/", "_"),
        "x-scope": scope.value if scope is not None else None,
        "responses": _responses(operation, ref_of, scope is not None),
    }
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAMETER.findall(path)
    ]
    if parameters:
        described["parameters"] = parameters
    if scope is not None:
        described["security"] = [{"bearer": []}]
    if operation.request is not None:
        content = {operation.request_media: {"schema": ref_of[operation.request]}}
        described["requestBody"] = {"required": True, "content": content}
    elif operation.request_media != JSON:
        raw = {"type": "string", "format": "binary"}
        schema = raw if operation.request_media != "multipart/form-data" else _multipart_file()
        content = {operation.request_media: {"schema": schema}}
        described["requestBody"] = {"required": True, "content": content}
    return described


def _multipart_file() -> dict[str, Any]:
    properties = {"file": {"type": "string", "format": "binary"}, "purpose": {"type": "string", "enum": ["batch"]}}
    return {"type": "object", "properties": properties, "required": ["file", "purpose"]}


def _responses(operation: Operation, ref_of: dict[type[BaseModel], dict[str, Any]], secured: bool) -> dict[str, Any]:
    schema = ref_of[operation.response] if operation.response is not None else {"type": "object"}
    body = {"schema": schema} if operation.media == JSON else {"schema": {"type": "string"}}
    content = {operation.media: body}
    if operation.streams:
        content[SSE] = {"schema": {"type": "string", "description": "server-sent events, ending `data: [DONE]`"}}
    error = {"content": {JSON: {"schema": ref_of[operation.error]}}}
    responses: dict[str, Any] = {
        "200": {"description": operation.summary, "content": content},
        "4XX": {"description": "the client's mistake (the error names the field)", **error},
        "5XX": {"description": "unavailable (loading, draining, overloaded) or a server fault", **error},
    }
    if secured:
        responses["401"] = {"description": "no valid bearer token", **error}
        responses["403"] = {"description": "the token lacks the scope in x-scope", **error}
    return responses
