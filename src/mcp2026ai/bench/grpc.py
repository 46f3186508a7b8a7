"""The bench's gRPC client: inference.GRPCInferenceService over grpc.aio with tritonclient's stubs.

The ModelInferRequest is serialized once and sent as bytes on every call, and replies are not
parsed (only the status matters), so the client spends its CPU on the RPC itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc
from tritonclient.grpc import service_pb2_grpc as pb_grpc

INFER_METHOD = "/inference.GRPCInferenceService/ModelInfer"
_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


class GrpcSession:
    """One channel shared by every sender (HTTP/2 multiplexes the concurrent calls)."""

    def __init__(self, host: str, port: int, metadata: Mapping[str, str], timeout_s: float) -> None:
        self.channel = grpc.aio.insecure_channel(f"{host}:{port}", options=_OPTIONS)
        self.stub = pb_grpc.GRPCInferenceServiceStub(self.channel)
        self.metadata = tuple((key.lower(), value) for key, value in metadata.items())
        self.timeout_s = timeout_s
        self._infer = self.channel.unary_unary(INFER_METHOD)  # bytes in, bytes out

    async def infer(self, data: bytes) -> str:
        try:
            await self._infer(data, timeout=self.timeout_s, metadata=self.metadata)
        except grpc.aio.AioRpcError as exc:
            return str(exc.code().name)
        return "OK"

    async def close(self) -> None:
        await self.channel.close()


class GrpcSender:
    def __init__(self, session: GrpcSession, data: bytes) -> None:
        self.session, self.data = session, data

    async def send(self) -> str:
        return await self.session.infer(self.data)

    async def close(self) -> None:
        return None
