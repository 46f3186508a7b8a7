"""The OpenAPI description of the HTTP API (``/openapi.json``) and Swagger UI (``/docs``)."""

from mcp2026ai.server.http.openapi.document import openapi_document, undescribed
from mcp2026ai.server.http.openapi.routes import openapi_routes

__all__ = ["openapi_document", "openapi_routes", "undescribed"]
