"""KServe v2 clients (HTTP with httpx, gRPC with grpcio), blocking and asyncio, raising the domain
errors of :mod:`mcp2026ai.errors` for the server's refusals. Used by the edge proxy and ``mcp bench``."""

from mcp2026ai.client.grpc import AsyncV2GrpcClient, V2GrpcClient
from mcp2026ai.client.http import AsyncV2HttpClient, V2HttpClient

__all__ = ["AsyncV2GrpcClient", "AsyncV2HttpClient", "V2GrpcClient", "V2HttpClient"]
