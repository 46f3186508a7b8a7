"""``/openapi.json`` on the real server: valid OpenAPI (openapi-spec-validator), every served route
described, request bodies the routes' own pydantic models, scopes as the server enforces them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.http.app import build_http_app
from mcp2026ai.server.http.openai.codec import ChatCompletionRequest
from mcp2026ai.server.http.openapi import undescribed
from mcp2026ai.server.http.openapi.document import served_operations
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BackgroundServer, dict[str, Any]]]:
    root = tmp_path_factory.mktemp("openapi")
    registry = ModelRegistry(root / "home")
    registry.register("mlp", mlp_model(root / "mlp.onnx"))
    with BackgroundServer(registry, ["mlp"]) as server:
        response = httpx.get(f"http://{server.http_url}/openapi.json")
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        yield server, response.json()


def test_the_description_is_valid_openapi(served: tuple[BackgroundServer, dict[str, Any]]) -> None:
    _, document = served
    validate(document)  # raises on any violation of OpenAPI 3.1
    assert document["openapi"] == "3.1.0"


def test_every_served_route_is_described(served: tuple[BackgroundServer, dict[str, Any]]) -> None:
    server, document = served
    app = build_http_app(server.plane, server.config)
    routes = served_operations(app.routes)
    assert len(routes) > 60
    missing = [(path, method) for path, method in routes if method.lower() not in document["paths"].get(path, {})]
    assert missing == []
    for path in (
        "/v2/models/{model}/infer",
        "/v1/chat/completions",
        "/v2/models/{model}/generate",
        "/ui/api/live",
        "/v1/files",
        "/v1/batches/{batch_id}/cancel",
        "/v2/manage/audit",
        "/v1/rerank",
        "/health",
    ):
        assert path in document["paths"], path


def test_a_route_without_a_description_is_caught(served: tuple[BackgroundServer, dict[str, Any]]) -> None:
    server, _ = served

    async def endpoint(request: object) -> None: ...

    app = build_http_app(server.plane, server.config)
    assert undescribed(app.routes) == []
    app.router.routes.append(Route("/v2/undocumented", endpoint, methods=["POST"]))
    assert undescribed(app.routes) == [("/v2/undocumented", "POST")]


def test_bodies_are_the_routes_own_pydantic_models(served: tuple[BackgroundServer, dict[str, Any]]) -> None:
    _, document = served
    operation = document["paths"]["/v1/chat/completions"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ChatCompletionRequest"}
    described = document["components"]["schemas"]["ChatCompletionRequest"]
    own = ChatCompletionRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    assert described["properties"] == own["properties"]
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    infer = document["paths"]["/v2/models/{model}/infer"]["post"]
    assert infer["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/InferRequest"
    }


@pytest.mark.parametrize(
    ("path", "method", "scope"),
    [
        ("/v2/health/ready", "get", None),
        ("/health", "get", None),
        ("/openapi.json", "get", None),
        ("/v2/models/{model}/infer", "post", "infer"),
        ("/v1/chat/completions", "post", "infer"),
        ("/v2/repository/models/{model}/load", "post", "manage"),
        ("/v2/models/{model}/artifact", "get", "pull"),
        ("/ui/fragments/audit", "get", "manage"),
    ],
)
def test_each_operation_states_its_scope(
    served: tuple[BackgroundServer, dict[str, Any]], path: str, method: str, scope: str | None
) -> None:
    _, document = served
    operation = document["paths"][path][method]
    assert operation["x-scope"] == scope
    assert ("security" in operation) == (scope is not None)


def test_docs_page_and_its_files_are_served_locally(served: tuple[BackgroundServer, dict[str, Any]]) -> None:
    server, _ = served
    base = f"http://{server.http_url}"
    page = httpx.get(base + "/docs")
    assert page.status_code == 200 and "/docs/static/swagger-ui-bundle.js" in page.text
    assert "://" not in page.text  # every script and style from this server
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "docs.js"):
        assert httpx.get(f"{base}/docs/static/{name}").status_code == 200, name
    refused = httpx.get(f"{base}/docs/static/..%2F..%2Fcore.py")
    assert refused.status_code == 404
    assert httpx.get(f"{base}/docs/static/swagger-editor.js").status_code == 404
