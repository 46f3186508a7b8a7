"""``mcp serve`` security flags -> :class:`ServingSecurity`, and the up-front signature check."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, error_console
from mcp2026ai.errors import InvalidArgumentError, SignatureError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.signing import verify_artifact
from mcp2026ai.security import ServingSecurity, TLSConfig, TokenStore, TrustConfig


def serving_security(
    require_signed: bool,
    trusted_keys: list[Path],
    auth: bool,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_ca: Path | None,
    tls_require_client_cert: bool,
) -> ServingSecurity:
    """Validate the flags together; every mistake is one line naming the flag or file."""
    paths = context.security_paths()
    if trusted_keys and not require_signed:
        raise InvalidArgumentError("--trusted-key only applies with --require-signed")
    if (tls_cert is None) != (tls_key is None):
        raise InvalidArgumentError("--tls-cert and --tls-key go together")
    if tls_cert is None and (tls_ca is not None or tls_require_client_cert):
        raise InvalidArgumentError("--tls-ca and --tls-require-client-cert need --tls-cert and --tls-key")
    tls = None
    if tls_cert is not None and tls_key is not None:
        tls = TLSConfig.from_paths(tls_cert, tls_key, tls_ca, tls_require_client_cert)
    if auth:
        _warn_without_tokens(TokenStore(paths.tokens_file))
    return ServingSecurity(
        auth=paths.auth_config(enabled=True) if auth else None,
        tls=tls,
        require_signed=require_signed,
        trust=TrustConfig(trusted_dir=paths.trusted_dir, trusted_keys=[*paths.extra_trusted_keys, *trusted_keys]),
        audit_log=paths.audit_log,
    )


def check_signatures(registry: ModelRegistry, names: list[str], security: ServingSecurity) -> None:
    """With --require-signed, refuse to start (exit 2) unless every model's default version verifies."""
    trusted = security.trusted_keys()
    if trusted is None:
        return
    for name in names:
        record = registry.resolve(name)
        try:
            signature = verify_artifact(registry, record, trusted)
        except SignatureError as exc:
            raise SignatureError(f"refusing to serve: {exc}") from None
        console.print(f"verified {record.ref}: signed by {signature.signer} ({signature.key_id})", highlight=False)


def _warn_without_tokens(store: TokenStore) -> None:
    now = datetime.now(UTC)
    if not any(record.active(now) for record in store.records()):
        error_console.print(
            "warning: --auth is on but no active token exists; create one with `mcp token create`", highlight=False
        )
