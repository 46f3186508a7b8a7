"""Locations as they may appear in messages and logs: no password, no query string (presigned tokens)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redacted_url(url: str) -> str:
    """``scheme://user@host:port/path``: the password and any ``?query``/``#fragment`` removed."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.split("://")[0] + "://(unparsable location)"
    if ":" in host:
        host = f"[{host}]"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, "", ""))
