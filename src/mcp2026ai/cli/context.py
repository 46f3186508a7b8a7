"""Objects CLI commands share: settings, the registry, security paths and the audit hook."""

from __future__ import annotations

import getpass
import os
from functools import lru_cache
from typing import Any

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security import AuditLog, SecurityPaths
from mcp2026ai.security.encryption import cipher_from_settings
from mcp2026ai.settings import Settings, load_settings


@lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()


def registry() -> ModelRegistry:
    """The registry; new artifacts are encrypted at rest when an artifact key is configured, and every
    registration is recorded in the audit log as by this user."""
    audit_log = AuditLog(security_paths().audit_log)
    return ModelRegistry(settings().home, cipher_from_settings(settings()), audit=audit_log, actor=actor())


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
    AuditLog(security_paths().audit_log).record(action, actor(), target, details)
