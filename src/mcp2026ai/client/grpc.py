"""KServe v2 over gRPC (inference.GRPCInferenceService, tritonclient's protobuf stubs): a blocking
client and an asyncio one, reading replies with :mod:`mcp2026ai.protocol.v2_grpc`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import grpc
import numpy as np
from google.protobuf import json_format
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.client.errors import from_grpc
from mcp2026ai.errors import MCPError
from mcp2026ai.inference import InferenceResponse
from mcp2026ai.protocol import v2_grpc

PUSHBACK_KEY = "grpc-retry-pushback-ms"
_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


def _metadata(token: str | None, *headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    pairs = [(key.lower(), value) for mapping in headers for key, value in (mapping or {}).items()]
    if token:
        pairs.append(("authorization", f"Bearer {token}"))
    return tuple(pairs)


def _error(exc: grpc.RpcError, where: str) -> MCPError:
    trailers = dict(exc.trailing_metadata() or ())  # type: ignore[attr-defined]
    return from_grpc(exc.code(), exc.details(), trailers.get(PUSHBACK_KEY), where)  # type: ignore[attr-defined]


def _as_dict(message: Any) -> dict[str, Any]:
    return dict(json_format.MessageToDict(message, preserving_proto_field_name=True))


class V2GrpcClient:
    """Blocking v2 gRPC client on one channel; every failure is an :class:`MCPError`."""

    def __init__(
        self,
        target: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``headers`` go as metadata with every call (an SLA class, a tenant)."""
        self.target = target
        self._channel = grpc.insecure_channel(target, options=_OPTIONS)
        self._stub = pb_grpc.GRPCInferenceServiceStub(self._channel)
        self._token, self._timeout_s, self._headers = token, timeout_s, dict(headers or {})

    def _call(self, method: str, request: Any, headers: Mapping[str, str] | None = None) -> Any:
        try:
            return getattr(self._stub, method)(
                request, timeout=self._timeout_s, metadata=_metadata(self._token, self._headers, headers)
            )
        except grpc.RpcError as exc:
            raise _error(exc, f"{method} on {self.target}") from None

    def live(self) -> bool:
        try:
            return bool(self._call("ServerLive", pb.ServerLiveRequest()).live)
        except MCPError:
            return False

    def ready(self) -> bool:
        try:
            return bool(self._call("ServerReady", pb.ServerReadyRequest()).ready)
        except MCPError:
            return False

    def model_ready(self, model: str, version: str | None = None) -> bool:
        try:
            return bool(self._call("ModelReady", pb.ModelReadyRequest(name=model, version=version or "")).ready)
        except MCPError:
            return False

    def model_metadata(self, model: str, version: str | None = None) -> dict[str, Any]:
        return _as_dict(self._call("ModelMetadata", pb.ModelMetadataRequest(name=model, version=version or "")))

    def model_config(self, model: str, version: str | None = None) -> dict[str, Any]:
        reply = self._call("ModelConfig", pb.ModelConfigRequest(name=model, version=version or ""))
        return _as_dict(reply.config)

    def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        outputs: Sequence[str] = (),
        version: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> InferenceResponse:
        request = v2_grpc.encode_request(model, version, inputs, outputs, binary=True)
        return v2_grpc.decode_response(self._call("ModelInfer", request, headers))

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> V2GrpcClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncV2GrpcClient:
    """The asyncio twin of :class:`V2GrpcClient` (grpc.aio)."""

    def __init__(
        self,
        target: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """``headers`` go as metadata with every call (an SLA class, a tenant)."""
        self.target = target
        self._channel = grpc.aio.insecure_channel(target, options=_OPTIONS)
        self._stub = pb_grpc.GRPCInferenceServiceStub(self._channel)
        self._token, self._timeout_s, self._headers = token, timeout_s, dict(headers or {})

    async def _call(self, method: str, request: Any, headers: Mapping[str, str] | None = None) -> Any:
        try:
            return await getattr(self._stub, method)(
                request, timeout=self._timeout_s, metadata=_metadata(self._token, self._headers, headers)
            )
        except grpc.aio.AioRpcError as exc:
            raise _error(exc, f"{method} on {self.target}") from None

    async def model_ready(self, model: str, version: str | None = None) -> bool:
        try:
            reply = await self._call("ModelReady", pb.ModelReadyRequest(name=model, version=version or ""))
        except MCPError:
            return False
        return bool(reply.ready)

    async def model_metadata(self, model: str, version: str | None = None) -> dict[str, Any]:
        reply = await self._call("ModelMetadata", pb.ModelMetadataRequest(name=model, version=version or ""))
        return _as_dict(reply)

    async def model_config(self, model: str, version: str | None = None) -> dict[str, Any]:
        reply = await self._call("ModelConfig", pb.ModelConfigRequest(name=model, version=version or ""))
        return _as_dict(reply.config)

    async def repository_index(self) -> list[dict[str, Any]]:
        reply = await self._call("RepositoryIndex", pb.RepositoryIndexRequest())
        return [_as_dict(model) for model in reply.models]

    async def infer(
        self,
        model: str,
        inputs: Mapping[str, np.ndarray],
        outputs: Sequence[str] = (),
        version: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> InferenceResponse:
        request = v2_grpc.encode_request(model, version, inputs, outputs, binary=True)
        return v2_grpc.decode_response(await self._call("ModelInfer", request, headers))

    async def aclose(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncV2GrpcClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
