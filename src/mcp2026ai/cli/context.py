"""Objects CLI commands share: settings, the registry, security paths and the audit hook."""

from __future__ import annotations

import getpass
import os
from functools import lru_cache
from typing import Any

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.stores import audit_chain_for, catalog_url, open_registry
from mcp2026ai.security import SecurityPaths
from mcp2026ai.security.audit import AuditChain
from mcp2026ai.security.encryption import cipher_from_settings
from mcp2026ai.settings import Settings, load_settings


@lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()


def registry() -> ModelRegistry:
    """The registry; new artifacts are encrypted at rest when an artifact key is configured, and every
    registration is recorded in the audit log as by this user."""
    return open_registry(settings(), cipher_from_settings(settings()), audit=audit_log(), actor=actor())


def audit_log() -> AuditChain:
    """The registry's audit chain: MCP_AUDIT_LOG (MCP_HOME/audit.jsonl), or beside a PostgreSQL catalog."""
    return audit_chain_for(catalog_url(settings()), security_paths().audit_log)


def security_paths() -> SecurityPaths:
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
