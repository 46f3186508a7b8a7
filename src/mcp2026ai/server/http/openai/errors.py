"""Domain errors as OpenAI's error document (``{"error": {"message", "type", "param", "code"}}``),
with the status the v2 routes give the same error (server/http/errors.py). ``param`` is the request
field the error names (``MCPError.param``); an over-long prompt has ``code: context_length_exceeded``."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from mcp2026ai.errors import (
    ColdLoadError,
    ContextLengthError,
    MCPError,
    NotFoundError,
    OverloadedError,
    bounded_message,
)
from mcp2026ai.server.http.errors import http_status


def openai_error_document(error: MCPError) -> dict[str, Any]:
    status = http_status(error)
    kind = "invalid_request_error" if status < 500 else "server_error"
    code = "model_not_found" if isinstance(error, NotFoundError) else None
    if isinstance(error, ContextLengthError):
        code = "context_length_exceeded"
    if isinstance(error, OverloadedError):
        kind, code = "rate_limit_error", "rate_limit_exceeded"
    return {"error": {"message": bounded_message(error), "type": kind, "param": error.param, "code": code}}


def openai_error(error: MCPError) -> Response:
    """OpenAI's error document with the domain error's HTTP status (and Retry-After when overloaded)."""
    headers = {}
    if isinstance(error, OverloadedError | ColdLoadError):
        headers["Retry-After"] = str(max(1, round(error.retry_after_s)))
    return Response(
        orjson.dumps(openai_error_document(error)), http_status(error), headers, media_type="application/json"
    )
