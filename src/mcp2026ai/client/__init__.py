"""KServe v2 clients (HTTP with httpx, gRPC with grpcio), blocking and asyncio, raising the domain
errors of :mod:`mcp2026ai.errors` for the server's refusals. Used by the edge proxy and ``mcp bench``;
:class:`Management`: the management API (``mcp --server URL``)."""

from mcp2026ai.client.grpc import AsyncV2GrpcClient, V2GrpcClient
from mcp2026ai.client.http import AsyncV2HttpClient, V2HttpClient
from mcp2026ai.client.management import Management

__all__ = ["AsyncV2GrpcClient", "AsyncV2HttpClient", "Management", "V2GrpcClient", "V2HttpClient"]
