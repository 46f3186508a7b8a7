"""Objects CLI commands share: settings, the registry, security paths, the audit hook, and the
management actions: on the local stores, or on a server's management API (``mcp --server URL``)."""

from __future__ import annotations

import getpass
import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.settings import Settings, load_settings

if TYPE_CHECKING:
    from mcp2026ai.cli.remote import RemoteManagement
    from mcp2026ai.dataplane.management import Management
    from mcp2026ai.registry import ModelRegistry
    from mcp2026ai.security import SecurityPaths
    from mcp2026ai.security.audit import AuditChain

_server: dict[str, str | None] = {}
"""``url`` and ``token`` of ``mcp --server URL --token T`` (empty: the local stores)."""


def use_server(url: str | None, token: str | None) -> None:
    """Management commands go to the server at ``url`` (None: the local stores)."""
    _server.clear()
    if url:
        _server.update(url=url, token=token)


def remote() -> bool:
    return bool(_server)


def management() -> Management | RemoteManagement:
    """The management actions: the server's over HTTP under ``--server``, else on the local stores
    (audited as this user)."""
    if _server:
        from mcp2026ai.cli.remote import RemoteManagement
        from mcp2026ai.client import Management as ManagementClient

        return RemoteManagement(ManagementClient(str(_server["url"]), _server.get("token")))
    from mcp2026ai.dataplane.management import Management
    from mcp2026ai.security import TrustedKeys

    trusted = TrustedKeys.from_config(security_paths().trust_config())
    return Management(registry(), audit_log(), actor(), trusted)


def local_only() -> None:
    """Refuse a command that works on the local stores only when ``--server`` is given."""
    if _server:
        raise InvalidArgumentError("this command works on the local stores: it is not available with --server")


@lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()


def registry() -> ModelRegistry:
    """The registry; new artifacts are encrypted at rest when an artifact key is configured, and every
    registration is recorded in the audit log as by this user."""
    from mcp2026ai.registry.stores import open_registry
    from mcp2026ai.security.encryption import cipher_from_settings

    local_only()
    return open_registry(settings(), cipher_from_settings(settings()), audit=audit_log(), actor=actor())


def audit_log() -> AuditChain:
    """The registry's audit chain: MCP_AUDIT_LOG (MCP_HOME/audit.jsonl), or beside a PostgreSQL catalog."""
    from mcp2026ai.registry.stores import audit_chain_for, catalog_url

    local_only()
    return audit_chain_for(catalog_url(settings()), security_paths().audit_log)


def security_paths() -> SecurityPaths:
    from mcp2026ai.security import SecurityPaths

    return SecurityPaths.from_settings(settings())


def actor() -> str:
    """``cli:<os user>`` — who ran a management command."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return f"cli:uid-{os.getuid()}"


def audit(action: str, target: str, details: dict[str, Any] | None = None) -> None:
    """Record a management action done from the CLI in the audit log."""
    audit_log().record(action, actor(), target, details)
