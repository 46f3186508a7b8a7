"""Register the servicer so that a request that does not parse is INVALID_ARGUMENT, not UNKNOWN.

grpc.aio ends an RPC whose bytes fail protobuf parsing with UNKNOWN ("Unexpected DecodeError"),
which reads like a server fault. Each method handler's deserializer is wrapped once, at
registration: a parse failure yields a :class:`Malformed` marker instead of raising, and the
wrapped behavior aborts with INVALID_ARGUMENT when it sees one. Nothing is added per call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc
from tritonclient.grpc import service_pb2_grpc as pb_grpc

SERVICE = "inference.GRPCInferenceService"


class Malformed:
    """Stands in for a request message that did not parse."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def lenient_deserializer(deserialize: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # protobuf's DecodeError, or anything a parser may raise  # noqa: BLE001
            return Malformed(f"request does not parse as a protobuf message ({type(exc).__name__})")

    return parse


async def _refuse(request: Any, context: grpc.aio.ServicerContext) -> None:
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)


def _unary_request(behavior: Callable[..., Any]) -> Callable[..., Any]:
    async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, Malformed):
            await _refuse(request, context)
        return await behavior(request, context)

    return call


def _stream_request(behavior: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    async def call(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        async def checked() -> AsyncIterator[Any]:
            async for request in requests:
                if isinstance(request, Malformed):
                    await _refuse(request, context)
                yield request

        async for response in behavior(checked(), context):
            yield response

    return call


def lenient(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """The same handler, answering INVALID_ARGUMENT for an unparsable request (unary-unary, stream-stream)."""
    codecs = {
        "request_deserializer": lenient_deserializer(handler.request_deserializer),
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(_unary_request(handler.unary_unary), **codecs)
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(_stream_request(handler.stream_stream), **codecs)
    return handler  # the v2 service has no other shapes


class _Capture:
    """Stands in for the server while the generated code registers its method handlers."""

    def __init__(self) -> None:
        self.handlers: dict[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        for handler in handlers:
            self._add(getattr(handler, "_method_handlers", {}) or {})

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, grpc.RpcMethodHandler]) -> None:
        self._add(handlers)

    def _add(self, handlers: Mapping[str, grpc.RpcMethodHandler]) -> None:
        self.handlers.update({name.rsplit("/", 1)[-1]: handler for name, handler in handlers.items()})


def add_inference_servicer(servicer: Any, server: grpc.aio.Server) -> dict[str, grpc.RpcMethodHandler]:
    """``add_GRPCInferenceServiceServicer_to_server`` with every handler made :func:`lenient`; the
    handlers by method name (``ModelInfer``, ...)."""
    capture = _Capture()
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(servicer, capture)
    handlers = {name: lenient(handler) for name, handler in capture.handlers.items()}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    if hasattr(server, "add_registered_method_handlers"):
        server.add_registered_method_handlers(SERVICE, handlers)
    return handlers
