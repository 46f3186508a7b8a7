"""``/openapi.json`` and ``/docs`` (Swagger UI).

Swagger UI's files come from the swagger-ui-py package (its ``static`` folder), served by
``/docs/static/{file}`` (only the files the page uses); nothing is loaded from a CDN, and the page
sets no validator URL (Swagger UI would otherwise send the description to validator.swagger.io).

Scopes with ``--auth``: all three are open, like the console's page shells. The description holds
no data: the same routes and shapes for every installation; trying an operation from the page sends
the token typed into its Authorize dialog. Nothing is read from disk but the package's files; the
description is built once, on first request.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import orjson
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from mcp2026ai.errors import NotFoundError, UnavailableError
from mcp2026ai.server.http.openapi.document import openapi_document

SWAGGER_FILES = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"})
DOCS_SCRIPT = "docs.js"
HERE = Path(__file__).parent
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcp2026ai API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="icon" href="/docs/static/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/docs.js"></script></body></html>
"""


def swagger_folder() -> Path:
    """swagger-ui-py's static folder (found without importing the package, which imports its handlers)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise UnavailableError("/docs needs swagger-ui-py (pip install swagger-ui-py)")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


class ApiDocs:
    def __init__(self) -> None:
        self._document: bytes | None = None

    async def openapi(self, request: Request) -> Response:
        if self._document is None:
            self._document = orjson.dumps(openapi_document(request.app.routes))
        return Response(self._document, media_type="application/json")

    async def page(self, request: Request) -> Response:
        return HTMLResponse(PAGE)

    async def static(self, request: Request) -> Response:
        name = request.path_params["file"]
        if name == DOCS_SCRIPT:
            return FileResponse(HERE / DOCS_SCRIPT, media_type="text/javascript")
        if name not in SWAGGER_FILES:
            raise NotFoundError(f"no such file: /docs/static/{name}")
        return FileResponse(swagger_folder() / name)


def openapi_routes() -> list[Route]:
    docs = ApiDocs()
    return [
        Route("/openapi.json", docs.openapi, methods=["GET"]),
        Route("/docs", docs.page, methods=["GET"]),
        Route("/docs/static/{file}", docs.static, methods=["GET"]),
    ]
