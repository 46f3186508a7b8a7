"""``--max-connections`` for gRPC: calls in progress over every acceptor, RESOURCE_EXHAUSTED above.

grpc.aio's own ``maximum_concurrent_rpcs`` counts only the calls its own serving coroutine accepts;
the extra ModelInfer acceptors (acceptors.py) hand calls to grpc.aio's handling with the limit off,
so under load most calls were never counted. This interceptor counts where every call passes, the
interceptors both kinds of acceptor run, and refuses a call that would exceed the limit before its
handler runs.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from typing import Any

import grpc

from mcp2026ai.server.grpc.auth import Continuation, refusal_handler


class CallLimitInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    def refusal(self) -> str:
        return f"the server has {self.active} calls in progress (--max-connections {self.limit}); retry later"

    async def intercept_service(
        self, continuation: Continuation, details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(details)
        if handler is None:
            return None
        if self.active >= self.limit:
            return refusal_handler(handler, grpc.StatusCode.RESOURCE_EXHAUSTED, self.refusal())
        codecs = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(self._counted(handler.unary_unary), **codecs)
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(self._counted(handler.stream_unary), **codecs)
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(self._counted_stream(handler.unary_stream), **codecs)
        return grpc.stream_stream_rpc_method_handler(self._counted_stream(handler.stream_stream), **codecs)

    def _counted(self, behavior: Any) -> Any:
        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if self.active >= self.limit:  # others started since the check above
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self.refusal())
            self.active += 1
            try:
                return await behavior(request, context)
            finally:
                self.active -= 1

        return call

    def _counted_stream(self, behavior: Any) -> Any:
        if not inspect.isasyncgenfunction(behavior):  # a coroutine writing with context.write
            return self._counted(behavior)

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if self.active >= self.limit:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, self.refusal())
            self.active += 1
            try:
                async for reply in behavior(request, context):
                    yield reply
            finally:
                self.active -= 1

        return stream
