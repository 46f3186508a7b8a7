"""Security: signing keys and trust, API tokens and authentication, the audit log, TLS.

Transport-neutral: the servers call :class:`Authenticator`, :class:`AuditLog`, :class:`TLSConfig`
and ``mcp2026ai.registry.signing.verify_artifact``; errors are domain errors from
``mcp2026ai.errors``.
"""

from mcp2026ai.security.audit import AuditLog, AuditReport
from mcp2026ai.security.auth import ANONYMOUS, AuthConfig, Authenticator, Principal, bearer_token
from mcp2026ai.security.config import SecurityPaths
from mcp2026ai.security.keys import KeyRing, PublicKey, SigningKey, load_public_key
from mcp2026ai.security.serving import ServingSecurity
from mcp2026ai.security.tls import TLSConfig, client_ssl_context, grpc_channel_credentials
from mcp2026ai.security.tokens import IssuedToken, Scope, TokenRecord, TokenStore
from mcp2026ai.security.trust import TrustConfig, TrustedKeys, trust_key_file

__all__ = [
    "ANONYMOUS",
    "AuditLog",
    "AuditReport",
    "AuthConfig",
    "Authenticator",
    "IssuedToken",
    "KeyRing",
    "Principal",
    "PublicKey",
    "Scope",
    "SecurityPaths",
    "ServingSecurity",
    "SigningKey",
    "TLSConfig",
    "TokenRecord",
    "TokenStore",
    "TrustConfig",
    "TrustedKeys",
    "bearer_token",
    "client_ssl_context",
    "grpc_channel_credentials",
    "load_public_key",
    "trust_key_file",
]
