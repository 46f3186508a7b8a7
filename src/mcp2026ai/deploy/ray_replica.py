"""Where a Ray Serve replica finds the registry, and how its answers say which replica answered.

On the local stores a replica opens ``MCP_HOME`` at the driver's path, which must be the same on every
node (one machine, a shared volume, or the image). On shared stores (a PostgreSQL catalog and S3
artifacts: docs/registry-backends.md) nothing is shared on disk: the driver forwards the stores'
settings to the replicas, and each replica works in a scratch
directory of its own on its node (the cache of fetched artifacts, imports, the audit log of what it
loads), removed when the replica stops.

Secrets never go in the runtime environment: Ray keeps ``runtime_env`` in its GCS and shows it in the
dashboard and state API. The runtime environment carries the plain settings (bucket URL, endpoint,
region, sizes) and the *names* of the secret ones (``MCP_REPLICA_SECRETS``); the values travel as the
replica's constructor argument (:class:`ReplicaSecrets`, whose repr names no value) and are set in the
replica's own process environment, unless its node already provides them (a Kubernetes Secret on the
Ray pods wins over the driver's copy).

Every answer carries ``x-mcp-replica: <replica id>@<node id>``, so that a client (or a test) can tell
which replica on which Ray node answered through Ray's proxy.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
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

SECRET_ENV = frozenset(
    {"MCP_CATALOG_URL", "MCP_ARTIFACT_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}
)
"""Forwarded variables whose values are secrets (the catalog URL may hold the database password)."""

SECRET_NAMES_VAR = "MCP_REPLICA_SECRETS"


@dataclass(frozen=True)
class ReplicaSecrets:
    """Secret settings handed to a replica's constructor: never in ``runtime_env``, never in a repr."""

    values: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"ReplicaSecrets({sorted(self.values)})"

    def apply(self, environ: MutableMapping[str, str]) -> None:
        """Set each secret the node does not already provide."""
        for name, value in self.values.items():
            environ.setdefault(name, value)


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The shared stores' plain settings from ``environ`` for the replicas' runtime environment, with
    the names (never the values) of the secret ones."""
    plain = {name: environ[name] for name in FORWARDED_ENV if environ.get(name) and name not in SECRET_ENV}
    secrets = sorted(name for name in SECRET_ENV if environ.get(name))
    return {**plain, SECRET_NAMES_VAR: ",".join(secrets)} if secrets else plain


def replica_secrets(environ: Mapping[str, str]) -> ReplicaSecrets:
    """The driver's values of the secret settings, for the replicas' constructor."""
    return ReplicaSecrets({name: environ[name] for name in sorted(SECRET_ENV) if environ.get(name)})


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
