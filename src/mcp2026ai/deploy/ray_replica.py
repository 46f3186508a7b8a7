"""Where a Ray Serve replica finds the registry, and how its answers say which replica answered.

On the local stores a replica opens ``MCP_HOME`` at the driver's path, which must be the same on every
node (one machine, a shared volume, or the image). On shared stores (a PostgreSQL catalog and S3
artifacts: docs/registry-backends.md) nothing is shared on disk: the driver forwards the stores'
settings to the replicas in their Ray runtime environment, and each replica works in a scratch
directory of its own on its node (the cache of fetched artifacts, imports, the audit log of what it
loads), removed when the replica stops.

Every answer carries ``x-mcp-replica: <replica id>@<node id>``, so that a client (or a test) can tell
which replica on which Ray node answered through Ray's proxy.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

REPLICA_HEADER = "x-mcp-replica"

FORWARDED_ENV = (
    "MCP_CATALOG_URL",
    "MCP_ARTIFACT_URL",
    "MCP_ARTIFACT_CACHE_BYTES",
    "MCP_ARTIFACT_MULTIPART_BYTES",
    "MCP_ARTIFACT_KEY",
    "MCP_ARTIFACT_KEY_FILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
)
"""The variables that select and open the shared stores; the driver's values go to every replica."""


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The shared stores' settings from ``environ``, for the replicas' runtime environment."""
    return {name: environ[name] for name in FORWARDED_ENV if environ.get(name)}


def scratch_home() -> Path:
    """A fresh directory for one replica on its node (under the node's TMPDIR)."""
    return Path(tempfile.mkdtemp(prefix="mcp-replica-"))


def node_audit_log(home: Path) -> Path:
    """The log of what this replica loads: the node's ``MCP_AUDIT_LOG``, else in its scratch directory."""
    configured = os.environ.get("MCP_AUDIT_LOG")
    return Path(configured) if configured else home / "audit.jsonl"


def replica_identity() -> str:
    """``<replica id>@<node id>`` of the Ray Serve replica this runs in."""
    import ray
    from ray import serve

    replica = serve.get_replica_context().replica_id.unique_id
    return f"{replica}@{ray.get_runtime_context().get_node_id()}"


class ReplicaHeader:
    """ASGI middleware: every HTTP response carries ``x-mcp-replica``."""

    def __init__(self, app: ASGIApp, identity: str) -> None:
        self.app = app
        self.header = (REPLICA_HEADER.encode(), identity.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self.header]}
            await send(message)

        await self.app(scope, receive, stamped)
