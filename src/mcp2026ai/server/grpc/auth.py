"""Bearer-token authentication for the gRPC server: a grpc.aio interceptor reading ``authorization``.

Scopes mirror the HTTP server: ServerLive, ServerReady and the standard ``grpc.health.v1.Health``
service are open (health probes); server reflection needs ``infer``;
RepositoryModelLoad and RepositoryModelUnload need ``manage``, the shared memory calls ``shm``; every
other RPC needs ``infer``.
A refused call ends with UNAUTHENTICATED or PERMISSION_DENIED before the servicer runs; an accepted
management call finds its :class:`Principal` in :data:`PRINCIPAL` (for the audit log).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any

import grpc

from mcp2026ai.errors import MCPError, bounded_message
from mcp2026ai.security import ANONYMOUS, Authenticator, Principal, Scope
from mcp2026ai.server.grpc.errors import grpc_status

OPEN_METHODS = frozenset({"ServerLive", "ServerReady"})
OPEN_SERVICE_PREFIXES = ("/grpc.health.v1.Health/",)
MANAGE_METHODS = frozenset({"RepositoryModelLoad", "RepositoryModelUnload", "TraceSetting", "LogSettings"})
PRINCIPAL: ContextVar[Principal] = ContextVar("mcp_grpc_principal", default=ANONYMOUS)

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]]


def required_scope(method: str) -> Scope | None:
    """The scope a full method name (``/inference.GRPCInferenceService/ModelInfer``) needs."""
    name = method.rsplit("/", 1)[-1]
    if name in OPEN_METHODS or method.startswith(OPEN_SERVICE_PREFIXES):
        return None
    if name in MANAGE_METHODS:
        return Scope.MANAGE
    return Scope.SHM if "SharedMemory" in name else Scope.INFER


def authorization(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    for key, value in metadata or ():
        if key.lower() == "authorization":
            return value if isinstance(value, str) else value.decode("latin-1")
    return None


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator

    async def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        needed = required_scope(details.method)
        if handler is None or needed is None:
            return handler
        try:
            principal = self.authenticator.authenticate(authorization(details.invocation_metadata), needed)
        except MCPError as exc:
            return refusal_handler(handler, grpc_status(exc), bounded_message(exc))
        if handler.unary_unary is not None and needed is Scope.MANAGE:
            return _with_principal(handler, principal)
        return handler


def refusal_handler(handler: grpc.RpcMethodHandler, code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler:
    """A handler of the same shape that ends the call with ``code``."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(code, message)

    codecs = {"request_deserializer": handler.request_deserializer, "response_serializer": handler.response_serializer}
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(refuse, **codecs)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(refuse, **codecs)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(refuse, **codecs)
    return grpc.stream_stream_rpc_method_handler(refuse, **codecs)


def _with_principal(handler: grpc.RpcMethodHandler, principal: Principal) -> grpc.RpcMethodHandler:
    behavior = handler.unary_unary

    async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
        token = PRINCIPAL.set(principal)
        try:
            return await behavior(request, context)
        finally:
            PRINCIPAL.reset(token)

    return grpc.unary_unary_rpc_method_handler(
        call, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
    )
