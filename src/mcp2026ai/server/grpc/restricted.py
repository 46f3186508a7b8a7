"""A grpc.aio interceptor refusing the management API groups switched off with ``--disable-api``
(server/api_groups.py): PERMISSION_DENIED naming the flag, before the servicer runs."""

from __future__ import annotations

from collections.abc import Collection

import grpc

from mcp2026ai.errors import MCPError, bounded_message
from mcp2026ai.server.api_groups import check_enabled, grpc_group
from mcp2026ai.server.grpc.auth import Continuation, refusal_handler
from mcp2026ai.server.grpc.errors import grpc_status


class DisabledApisInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, disabled: Collection[str]) -> None:
        self.disabled = frozenset(disabled)

    async def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None:
            return None
        try:
            check_enabled(grpc_group(details.method), self.disabled)
        except MCPError as exc:
            return refusal_handler(handler, grpc_status(exc), bounded_message(exc))
        return handler
