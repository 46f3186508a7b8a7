"""Which URLs the management API may be asked to register a model from: ``https://`` to a host whose
every address is public, or ``s3://`` in the server's configured store. Loopback, private, link-local
(cloud metadata at 169.254.169.254), multicast and reserved addresses are refused, as is plain
``http://``: a ``manage`` token must not turn the server into a client of its own network.

The host is resolved here and again by the download; a DNS answer that changes in between (DNS
rebinding) is not caught: the operator's egress rules are the real boundary.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from mcp2026ai.errors import InvalidFieldError
from mcp2026ai.registry.redaction import redacted_url


def check_fetchable(url: str) -> None:
    """InvalidFieldError (field ``url``) unless the server may fetch ``url``."""
    parts = urlsplit(url)
    shown = redacted_url(url)
    if parts.scheme == "s3":
        return
    if parts.scheme != "https" or not parts.hostname:
        raise InvalidFieldError(f"url: {shown}: give an https:// or s3:// URL", "url")
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(parts.hostname, parts.port or 443)}
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidFieldError(f"url: {shown}: cannot resolve {parts.hostname!r} ({exc})", "url") from None
    inner = sorted(address for address in addresses if not ipaddress.ip_address(address.split("%")[0]).is_global)
    if inner:
        raise InvalidFieldError(
            f"url: {shown}: {parts.hostname!r} resolves to a non-public address ({inner[0]}); refused", "url"
        )
