"""Where security state lives under MCP_HOME, derived from the process settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mcp2026ai.security.auth import AuthConfig
from mcp2026ai.security.trust import TrustConfig
from mcp2026ai.settings import Settings


class SecurityPaths(BaseModel):
    """``keys/`` (signing key pairs), ``trusted/`` (trusted public keys), ``tokens.json``, ``audit.jsonl``."""

    model_config = ConfigDict(frozen=True)

    keys_dir: Path
    trusted_dir: Path
    tokens_file: Path
    audit_log: Path
    extra_trusted_keys: list[Path] = []

    @classmethod
    def from_settings(cls, settings: Settings) -> SecurityPaths:
        home = settings.home
        return cls(
            keys_dir=home / "keys",
            trusted_dir=home / "trusted",
            tokens_file=settings.tokens_file or home / "tokens.json",
            audit_log=settings.audit_log or home / "audit.jsonl",
            extra_trusted_keys=list(settings.trusted_keys),
        )

    def trust_config(self) -> TrustConfig:
        return TrustConfig(trusted_dir=self.trusted_dir, trusted_keys=self.extra_trusted_keys)

    def auth_config(self, enabled: bool) -> AuthConfig:
        return AuthConfig(enabled=enabled, tokens_file=self.tokens_file)
