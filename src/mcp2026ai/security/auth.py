"""Transport-neutral bearer-token authentication with scopes.

The HTTP server passes the ``Authorization`` header, the gRPC server the ``authorization``
metadata value; both read ``Bearer <token>``. Failures are domain errors the transports map:
:class:`UnauthenticatedError` (401 / UNAUTHENTICATED) for a missing, malformed, unknown, revoked
or expired token, :class:`PermissionDeniedError` (403 / PERMISSION_DENIED) for a missing scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import PermissionDeniedError, UnauthenticatedError
from mcp2026ai.security.tokens import Scope, TokenStore

_MAX_CREDENTIAL_CHARS = 512


class AuthConfig(BaseModel):
    """Authentication settings; off unless ``enabled`` (the servers' ``--auth`` flag)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(False, description="Require a bearer token on every request except health probes.")
    tokens_file: Path = Field(description="JSON file of hashed tokens (MCP_HOME/tokens.json).")


@dataclass(frozen=True)
class Principal:
    """Who made a request, and what they may do."""

    name: str
    scopes: frozenset[Scope]
    token_id: str | None = None

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes

    @property
    def actor(self) -> str:
        """How the audit log names this caller: ``token:<name>``, or ``anonymous`` with auth off."""
        return f"token:{self.name}" if self.token_id else self.name


ANONYMOUS = Principal("anonymous", frozenset(Scope))


def bearer_token(credentials: str | None) -> str:
    """The token in ``Bearer <token>`` (scheme case-insensitive); UnauthenticatedError otherwise."""
    if credentials is None or not credentials.strip():
        raise UnauthenticatedError("missing bearer token (send 'Authorization: Bearer <token>')")
    if len(credentials) > _MAX_CREDENTIAL_CHARS:
        raise UnauthenticatedError("authorization value is too long")
    scheme, _, token = credentials.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthenticatedError("authorization must read 'Bearer <token>'")
    return token.strip()


class Authenticator:
    """Checks credentials against the token store; with auth disabled everyone is ANONYMOUS."""

    def __init__(
        self, config: AuthConfig, store: TokenStore | None = None, clock: Callable[[], datetime] | None = None
    ) -> None:
        self.config = config
        self.store = store or TokenStore(config.tokens_file)
        self._clock = clock or (lambda: datetime.now(UTC))

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    def authenticate(self, credentials: str | None, required_scope: Scope) -> Principal:
        """The caller's principal if the token is valid and has ``required_scope``."""
        if not self.config.enabled:
            return ANONYMOUS
        record = self.store.lookup(bearer_token(credentials))
        if record is None:
            raise UnauthenticatedError("invalid bearer token")
        now = self._clock()
        if record.revoked_at is not None:
            raise UnauthenticatedError(f"token {record.name!r} was revoked")
        if record.expired(now):
            assert record.expires_at is not None
            raise UnauthenticatedError(f"token {record.name!r} expired at {record.expires_at:%Y-%m-%d %H:%M:%S} UTC")
        principal = Principal(record.name, frozenset(record.scopes), record.id)
        if not principal.allows(required_scope):
            raise PermissionDeniedError(f"token {record.name!r} lacks the {required_scope.value!r} scope")
        return principal
