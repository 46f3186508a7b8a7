"""What the servers enforce: bearer-token auth, TLS, signed-model loading, the audit log.

A requested configuration (pydantic, picklable for ``--workers``); the built objects
(:class:`Authenticator`, :class:`TrustedKeys`, :class:`AuditLog`) come from its methods.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.security.audit import AuditLog
from mcp2026ai.security.auth import AuthConfig, Authenticator
from mcp2026ai.security.tls import TLSConfig
from mcp2026ai.security.trust import TrustConfig, TrustedKeys


class ServingSecurity(BaseModel):
    """Everything off by default: no auth, plaintext transports, unsigned models load, no audit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    auth: AuthConfig | None = Field(None, description="Bearer tokens with scopes (`mcp serve --auth`).")
    tls: TLSConfig | None = Field(None, description="HTTPS and gRPC over TLS (`--tls-cert/--tls-key`).")
    require_signed: bool = Field(False, description="Load only versions a trusted key signed (`--require-signed`).")
    trust: TrustConfig = Field(default_factory=TrustConfig, description="Where trusted public keys come from.")
    audit_log: Path | None = Field(None, description="JSONL audit log for management actions; None: not recorded.")

    def authenticator(self) -> Authenticator | None:
        """The token checker when auth is on, else None (every caller is anonymous)."""
        return Authenticator(self.auth) if self.auth is not None and self.auth.enabled else None

    def trusted_keys(self) -> TrustedKeys | None:
        """The trusted keys when signatures are required (at least one, or InvalidArgumentError), else None."""
        if not self.require_signed:
            return None
        keys = TrustedKeys.from_config(self.trust)
        if not len(keys):
            where = self.trust.trusted_dir or "no trusted directory"
            raise InvalidArgumentError(
                f"--require-signed: no trusted public keys ({where} has no *.pub; "
                "pass --trusted-key or run `mcp keys trust`)"
            )
        return keys

    def audit(self) -> AuditLog | None:
        return AuditLog(self.audit_log) if self.audit_log is not None else None
