"""Connections to the PostgreSQL catalog, with connection failures as one clear domain error."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp2026ai.errors import InvalidArgumentError, UnauthenticatedError, UnavailableError
from mcp2026ai.extras import require
from mcp2026ai.registry.redaction import redacted_url

CONNECT_TIMEOUT_S = 5


@contextmanager
def connected(url: str, autocommit: bool = False) -> Iterator[Any]:
    """A connection (closed on exit; without ``autocommit``, its transaction commits on a clean exit)."""
    psycopg = require("psycopg", "a PostgreSQL catalog (MCP_CATALOG_URL=postgresql://...)")
    try:
        db = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        raise connection_error(url, exc) from None
    except psycopg.Error:  # a malformed URL: its text may hold a password, so it is not quoted
        raise InvalidArgumentError(f"catalog {redacted_url(url)}: not a valid PostgreSQL connection URL") from None
    try:
        with db:
            yield db
    except psycopg.OperationalError as exc:  # the server went away mid-transaction
        raise connection_error(url, exc) from None


def connection_error(url: str, exc: Exception) -> Exception:
    reason = " ".join(str(exc).split())
    where = f"catalog {redacted_url(url)}"
    if "password authentication failed" in reason or "authentication" in reason:
        return UnauthenticatedError(f"{where} refused the credentials: {reason}")
    return UnavailableError(f"{where} is unreachable: {reason}")
