"""ASGI middleware refusing the management API groups switched off with ``--disable-api`` (server/api_groups.py)."""

from __future__ import annotations

from collections.abc import Collection

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp2026ai.errors import MCPError
from mcp2026ai.server.api_groups import check_enabled, http_group
from mcp2026ai.server.http.errors import error_response


class DisabledApis:
    def __init__(self, app: ASGIApp, disabled: Collection[str]) -> None:
        self.app = app
        self.disabled = frozenset(disabled)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                check_enabled(http_group(scope["path"], scope.get("method", "GET")), self.disabled)
            except MCPError as exc:
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)
