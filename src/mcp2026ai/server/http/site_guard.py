"""Refusing what a web browser may send on a page's behalf: DNS rebinding and cross-site requests.

A server on 127.0.0.1 without ``--auth`` is reachable by every page the local browser opens. Two
checks, made from the request line and headers alone, keep those pages out:

- **Host** (DNS rebinding): a loopback-bound server answers only the loopback names (``localhost``,
  ``*.localhost``, ``127.0.0.1``, ``[::1]``) plus those given with ``--allowed-host``; a server bound
  elsewhere answers every name unless some are given. The names are matched as starlette's
  ``TrustedHostMiddleware`` matches them (its host parser and its ``*.domain`` patterns; this class
  is one, with the v2 error JSON for an answer).
- **Cross-site** (CSRF): a request that may change state (any method but GET, HEAD, OPTIONS) is
  refused when the browser says it comes from another site: ``Sec-Fetch-Site`` other than
  ``same-origin`` or ``none``, or an ``Origin`` (``null`` included) that is not the request's own
  ``Host``. Clients that are not browsers send neither header and are not affected.

The same :meth:`SiteGuard.refusal` is asked by the ASGI middleware (every Starlette route), the direct
inference route (server/http/direct.py) and the refusals written from the headers alone
(server/http/connection/early.py), so no path answers a request the guard refuses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette._utils import parse_host_header
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp2026ai.errors import InvalidArgumentError, PermissionDeniedError
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.errors import error_response

LOOPBACK_HOSTS = ("localhost", "*.localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME_SITE_FETCHES = frozenset({"same-origin", "none"})
_SHOWN = 100
_REMEMBERED_HOSTS = 256


def is_loopback_address(host: str) -> bool:
    """Whether a bind address is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, authenticated: bool, allow_unauthenticated: bool) -> None:
    """A server bound to an address other hosts reach needs ``--auth``, or an explicit
    ``--allow-unauthenticated`` (InvalidArgumentError naming both)."""
    if is_loopback_address(host) or authenticated or allow_unauthenticated:
        return
    raise InvalidArgumentError(
        f"--host {host} is reachable from other machines and --auth is off: anyone there could load, "
        "unload and download models; add --auth (tokens from `mcp token create`), or --allow-unauthenticated "
        "to serve it open anyway"
    )


def allowed_host_patterns(config: ServerConfig) -> list[str] | None:
    """The Host names the server answers; None: any."""
    if is_loopback_address(config.host) or config.allowed_hosts:
        return [*LOOPBACK_HOSTS, *config.allowed_hosts]
    return None


def site_guard(config: ServerConfig, app: ASGIApp | None = None) -> SiteGuard:
    """The guard for ``config``'s bind address and ``--allowed-host`` names (``app``: what it guards, if
    it is used as middleware)."""
    return SiteGuard(app or _checks_only, allowed_host_patterns(config))


async def _checks_only(scope: Scope, receive: Receive, send: Send) -> None:
    raise RuntimeError("this SiteGuard is asked for its checks only (refusal), not called as an app")


class SiteGuard(TrustedHostMiddleware):
    """ASGI middleware refusing foreign ``Host`` names and cross-site state changes (403, v2 error JSON)."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str] | None) -> None:
        super().__init__(app, allowed_hosts=allowed_hosts, www_redirect=False)
        self._seen_hosts: dict[str | None, bool] = {}
        """Host headers already judged (clients send a handful): the answer without a parse per request."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            message = self.refusal(scope.get("method", "GET"), scope["headers"])
            if message is not None:
                await error_response(PermissionDeniedError(message))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, method: str, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """Why the request is refused, or None to serve it."""
        host = origin = fetch_site = None
        for name, value in headers:
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
            elif name == b"sec-fetch-site":
                fetch_site = value.decode("latin-1").strip().lower()
        if not self.allow_any and not self._host_allowed(host):
            shown = (host or "")[:_SHOWN]
            return (
                f"Host {shown!r} is not a name this server answers (loopback names and --allowed-host); "
                f"start it with --allowed-host NAME to answer it"
            )
        if method in SAFE_METHODS:
            return None
        return _cross_site(host, origin, fetch_site, method)

    def _host_allowed(self, header: str | None) -> bool:
        known = self._seen_hosts.get(header)
        if known is None:
            known = self._judge_host(header)
            if len(self._seen_hosts) < _REMEMBERED_HOSTS:
                self._seen_hosts[header] = known
        return known

    def _judge_host(self, header: str | None) -> bool:
        parsed = parse_host_header(header)
        if parsed is None:
            return False
        host = parsed.host.lower()
        return any(
            host == pattern or (pattern.startswith("*") and host.endswith(pattern[1:]))
            for pattern in self.allowed_hosts
        )


def _cross_site(host: str | None, origin: str | None, fetch_site: str | None, method: str) -> str | None:
    if fetch_site is not None and fetch_site not in SAME_SITE_FETCHES:
        return (
            f"cross-site {method} refused (Sec-Fetch-Site: {fetch_site[:_SHOWN]}): a page of another site may not "
            "change this server's state; send it from the server's own pages or from a client that is not a browser"
        )
    if origin is None:
        return None
    parts = urlsplit(origin.strip())
    if origin.strip().lower() != "null" and host is not None and parts.netloc.lower() == host.strip().lower():
        return None
    return (
        f"cross-site {method} refused (Origin {origin[:_SHOWN]!r} is not this server's): a page of another site "
        "may not change this server's state; send it from the server's own pages or from a client that is not a browser"
    )
