"""inference.GRPCInferenceService over grpc.aio, wire-compatible with tritonclient.grpc."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2 as config_pb
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import MCPError, PayloadTooLargeError, bounded_message
from mcp2026ai.observability.requests import EdgeCodes, InferObservation, observe_inference
from mcp2026ai.protocol import triton
from mcp2026ai.protocol.v2_grpc import decode_request, encode_response
from mcp2026ai.server.grpc.auth import PRINCIPAL
from mcp2026ai.server.grpc.errors import grpc_status, trailing_metadata
from mcp2026ai.server.grpc.streams import interleave
from mcp2026ai.server.statistics import ServerStatistics

log = logging.getLogger(__name__)
PROTOCOL = "grpc"
EDGE_CODES = EdgeCodes(ok="OK", unexpected="INTERNAL", cancelled="CANCELLED")

Request = TypeVar("Request")
Reply = TypeVar("Reply")
Handler = Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Reply]]


def domain_errors(handler: Handler[Request, Reply]) -> Handler[Request, Reply]:
    """Abort the RPC with the mapped status code when the data plane raises a domain error."""

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> Reply:
        try:
            return await handler(self, request, context)
        except MCPError as exc:
            await context.abort(grpc_status(exc), bounded_message(exc), trailing_metadata(exc))
            raise  # unreachable: abort raises

    return wrapper


def metadata_dict(context: grpc.aio.ServicerContext) -> dict[str, str]:
    return {key.lower(): value for key, value in (context.invocation_metadata() or ()) if isinstance(value, str)}


def caller_details(context: grpc.aio.ServicerContext) -> dict[str, str]:
    """What the audit log records about where a management call came from."""
    return {"protocol": "grpc", "peer": str(context.peer() or "")}


class InferenceServicer(pb_grpc.GRPCInferenceServiceServicer):  # type: ignore[misc]
    def __init__(self, plane: DataPlane, max_request_bytes: int, statistics: ServerStatistics | None = None) -> None:
        self.plane = plane
        self.max_request_bytes = max_request_bytes
        self.statistics = statistics or ServerStatistics(plane)

    async def ServerLive(self, request: Any, context: Any) -> pb.ServerLiveResponse:
        return pb.ServerLiveResponse(live=self.plane.live())

    async def ServerReady(self, request: Any, context: Any) -> pb.ServerReadyResponse:
        return pb.ServerReadyResponse(ready=self.plane.ready())

    @domain_errors
    async def ModelReady(self, request: pb.ModelReadyRequest, context: Any) -> pb.ModelReadyResponse:
        ready = self.plane.model_ready(request.name, request.version or None)  # unknown -> NOT_FOUND
        return pb.ModelReadyResponse(ready=ready)

    async def ServerMetadata(self, request: Any, context: Any) -> pb.ServerMetadataResponse:
        return json_format.ParseDict(triton.server_metadata(), pb.ServerMetadataResponse())

    @domain_errors
    async def ModelMetadata(self, request: pb.ModelMetadataRequest, context: Any) -> pb.ModelMetadataResponse:
        data = triton.model_metadata(self.plane.describe(request.name, request.version or None))
        return json_format.ParseDict(data, pb.ModelMetadataResponse())

    @domain_errors
    async def ModelConfig(self, request: pb.ModelConfigRequest, context: Any) -> pb.ModelConfigResponse:
        data = triton.model_config(self.plane.describe(request.name, request.version or None))
        config = json_format.ParseDict(data, config_pb.ModelConfig(), ignore_unknown_fields=True)
        return pb.ModelConfigResponse(config=config)

    @domain_errors
    async def ModelStatistics(self, request: pb.ModelStatisticsRequest, context: Any) -> pb.ModelStatisticsResponse:
        stats = await self.statistics.model_statistics(request.name or None, request.version or None)
        return json_format.ParseDict({"model_stats": stats}, pb.ModelStatisticsResponse())

    @domain_errors
    async def RepositoryIndex(self, request: Any, context: Any) -> pb.RepositoryIndexResponse:
        return json_format.ParseDict({"models": self.plane.repository.index()}, pb.RepositoryIndexResponse())

    @domain_errors
    async def RepositoryModelLoad(self, request: pb.RepositoryModelLoadRequest, context: Any) -> Any:
        parameters = {
            key: getattr(value, value.WhichOneof("parameter_choice") or "string_param")
            for key, value in request.parameters.items()
        }
        await self.plane.repository.load(request.model_name, PRINCIPAL.get().actor, caller_details(context), parameters)
        return pb.RepositoryModelLoadResponse()

    @domain_errors
    async def RepositoryModelUnload(self, request: pb.RepositoryModelUnloadRequest, context: Any) -> Any:
        await self.plane.repository.unload(request.model_name, PRINCIPAL.get().actor, caller_details(context))
        return pb.RepositoryModelUnloadResponse()

    @domain_errors
    async def SystemSharedMemoryStatus(self, request: Any, context: Any) -> Any:
        reply = pb.SystemSharedMemoryStatusResponse()
        for region in self.plane.extensions.system_shm_status(request.name or None):
            reply.regions[region["name"]].CopyFrom(pb.SystemSharedMemoryStatusResponse.RegionStatus(**region))
        return reply

    @domain_errors
    async def SystemSharedMemoryRegister(self, request: Any, context: Any) -> Any:
        self.plane.extensions.register_system_shm(request.name, request.key, request.offset, request.byte_size)
        return pb.SystemSharedMemoryRegisterResponse()

    @domain_errors
    async def SystemSharedMemoryUnregister(self, request: Any, context: Any) -> Any:
        self.plane.extensions.unregister_system_shm(request.name or None)
        return pb.SystemSharedMemoryUnregisterResponse()

    @domain_errors
    async def CudaSharedMemoryStatus(self, request: Any, context: Any) -> Any:
        self.plane.extensions.cuda_shm_status(request.name or None)
        return pb.CudaSharedMemoryStatusResponse()

    @domain_errors
    async def CudaSharedMemoryRegister(self, request: Any, context: Any) -> Any:
        self.plane.extensions.register_cuda_shm(request.name)
        return pb.CudaSharedMemoryRegisterResponse()

    @domain_errors
    async def CudaSharedMemoryUnregister(self, request: Any, context: Any) -> Any:
        self.plane.extensions.unregister_cuda_shm(request.name or None)
        return pb.CudaSharedMemoryUnregisterResponse()

    @domain_errors
    async def TraceSetting(self, request: pb.TraceSettingRequest, context: Any) -> pb.TraceSettingResponse:
        model = request.model_name or None
        changes = {key: (list(value.value) or None) for key, value in request.settings.items()}
        settings = (
            self.plane.extensions.update_trace_settings(_scalars(changes), model)
            if changes
            else self.plane.extensions.trace_settings(model)
        )
        response = pb.TraceSettingResponse()
        for key, value in settings.items():
            response.settings[key].value.extend(value if isinstance(value, list) else [str(value)])
        return response

    @domain_errors
    async def LogSettings(self, request: pb.LogSettingsRequest, context: Any) -> pb.LogSettingsResponse:
        changes = {key: getattr(value, value.WhichOneof("parameter_choice")) for key, value in request.settings.items()}
        settings = (
            self.plane.extensions.update_log_settings(changes) if changes else self.plane.extensions.log_settings()
        )
        response = pb.LogSettingsResponse()
        for key, value in settings.items():
            field = (
                "bool_param"
                if isinstance(value, bool)
                else "uint32_param"
                if isinstance(value, int)
                else "string_param"
            )
            setattr(response.settings[key], field, value)
        return response

    async def ModelInfer(self, request: pb.ModelInferRequest, context: grpc.aio.ServicerContext) -> Any:
        metadata = metadata_dict(context)
        with observe_inference(
            PROTOCOL, request.model_name, metadata, self.plane.is_served, EDGE_CODES, self.plane.serves_version
        ) as seen:
            seen.version = request.model_version
            try:
                return await self._infer(request, metadata, seen)
            except MCPError as exc:
                status, failure = grpc_status(exc), exc
                seen.fail(status.name, exc)
        # counted (above) before the status goes out: context.abort sends it, then raises; a client that
        # has its error finds it in the next scrape
        await context.abort(status, bounded_message(failure), trailing_metadata(failure))

    async def ModelStreamInfer(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        """One reply per request, in order (a decoupled model's: any number, as it sends them, between the
        others': server/grpc/streams.py); a failed request is answered in band (``error_message``), as
        Triton does, and counted and traced like a unary one (its code: the status it would get)."""
        metadata = metadata_dict(context)

        def decoupled(request: pb.ModelInferRequest) -> bool:
            return self.plane.inference.is_decoupled(request.model_name, request.model_version or None)

        async for reply in interleave(
            request_iterator,
            decoupled,
            lambda request: self._stream_reply(request, metadata),
            lambda request: self._decoupled_replies(request, metadata),
        ):
            yield reply

    async def _decoupled_replies(self, request: pb.ModelInferRequest, metadata: dict[str, str]) -> Any:
        """A decoupled model's responses to one request (any number); an error ends them in band."""
        with observe_inference(
            PROTOCOL, request.model_name, metadata, self.plane.is_served, EDGE_CODES, self.plane.serves_version
        ) as seen:
            seen.version = request.model_version
            try:
                if request.ByteSize() > self.max_request_bytes:
                    raise PayloadTooLargeError(f"request of {request.ByteSize()} bytes exceeds the limit")
                decoded = decode_request(request, metadata, self.plane.extensions.shared_memory)
                async for response in self.plane.inference.infer_stream(decoded):
                    encoded = encode_response(response, decoded, self.plane.extensions.shared_memory)
                    yield pb.ModelStreamInferResponse(infer_response=encoded)
            except MCPError as exc:
                seen.fail(grpc_status(exc).name, exc)
                yield pb.ModelStreamInferResponse(error_message=bounded_message(exc))
            except Exception as exc:  # a bug must not end every other request's stream
                log.exception("stream request to %r failed", request.model_name[:100])
                seen.fail(grpc.StatusCode.INTERNAL.name, exc)
                yield pb.ModelStreamInferResponse(error_message="internal error")

    async def _stream_reply(self, request: pb.ModelInferRequest, metadata: dict[str, str]) -> Any:
        with observe_inference(
            PROTOCOL, request.model_name, metadata, self.plane.is_served, EDGE_CODES, self.plane.serves_version
        ) as seen:
            seen.version = request.model_version
            try:
                response = await self._infer(request, metadata, seen)
                return pb.ModelStreamInferResponse(infer_response=response)
            except MCPError as exc:
                seen.fail(grpc_status(exc).name, exc)
                return pb.ModelStreamInferResponse(error_message=bounded_message(exc))
            except Exception as exc:  # a bug must not end every other request's stream
                log.exception("stream request to %r failed", request.model_name[:100])
                seen.fail(grpc.StatusCode.INTERNAL.name, exc)
                return pb.ModelStreamInferResponse(error_message="internal error")

    async def _infer(
        self, request: pb.ModelInferRequest, metadata: dict[str, str], seen: InferObservation
    ) -> pb.ModelInferResponse:
        """Check, decode, run and encode one ModelInferRequest, noting on ``seen`` what the metrics label."""
        size = request.ByteSize()
        if size > self.max_request_bytes:
            raise PayloadTooLargeError(f"request of {size} bytes exceeds the limit")
        requested = metadata.get("x-sla-class")
        if not requested and "sla_class" in request.parameters:
            requested = request.parameters["sla_class"].string_param
        self.plane.inference.check_admission(request.model_name, request.model_version or None, requested)
        decoded = decode_request(request, metadata, self.plane.extensions.shared_memory)
        response = await self.plane.inference.infer(decoded)
        seen.answered(response)
        return encode_response(response, decoded, self.plane.extensions.shared_memory)


def _scalars(changes: dict[str, list[str] | None]) -> dict[str, Any]:
    """gRPC trace settings are string lists; all but trace_level take one value."""
    return {key: value if key == "trace_level" or value is None else value[0] for key, value in changes.items()}
