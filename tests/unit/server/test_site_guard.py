"""SiteGuard.refusal: the Host and cross-site rules every HTTP path asks (site_guard.py)."""

from __future__ import annotations

import pytest

from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.site_guard import allowed_host_patterns, is_loopback_address, site_guard

LOOPBACK = site_guard(ServerConfig(host="127.0.0.1", allowed_hosts=["models.internal", "*.corp.example"]))
OPEN = site_guard(ServerConfig(host="0.0.0.0"))


def headers(**values: str) -> list[tuple[bytes, bytes]]:
    return [(name.replace("_", "-").encode(), value.encode()) for name, value in values.items()]


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8080",
        "127.0.0.1:8080",
        "[::1]:8080",
        "app.localhost",
        "models.internal",
        "a.corp.example",
    ],
)
def test_a_loopback_server_answers_loopback_and_allowed_names(host: str) -> None:
    assert LOOPBACK.refusal("GET", headers(host=host)) is None


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "corp.example.evil", "", "[zz::1]"])
def test_other_names_are_refused_naming_the_flag(host: str) -> None:
    message = LOOPBACK.refusal("GET", headers(host=host))
    assert message is not None and "--allowed-host" in message
    assert LOOPBACK.refusal("GET", []) is not None  # no Host at all: as starlette's TrustedHostMiddleware


def test_a_server_bound_elsewhere_answers_any_name_unless_names_are_given() -> None:
    assert allowed_host_patterns(ServerConfig(host="0.0.0.0")) is None
    assert OPEN.refusal("GET", headers(host="models.example.com")) is None
    named = site_guard(ServerConfig(host="0.0.0.0", allowed_hosts=["models.example.com"]))
    assert named.refusal("GET", headers(host="other.example.com")) is not None


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        ({}, False),  # not a browser
        ({"origin": "http://127.0.0.1:8080"}, False),  # the server's own page
        ({"origin": "http://127.0.0.1:8080", "sec_fetch_site": "same-origin"}, False),
        ({"sec_fetch_site": "none"}, False),  # typed in the address bar, a bookmark
        ({"origin": "http://localhost:8080"}, True),  # another origin, though the same machine
        ({"origin": "http://127.0.0.1:9999"}, True),
        ({"origin": "null"}, True),
        ({"sec_fetch_site": "same-site"}, True),
        ({"sec_fetch_site": "cross-site", "origin": "http://127.0.0.1:8080"}, True),
    ],
)
def test_state_changes_from_another_site_are_refused(extra: dict[str, str], refused: bool) -> None:
    sent = headers(host="127.0.0.1:8080", **extra)
    assert (LOOPBACK.refusal("POST", sent) is not None) is refused
    assert (OPEN.refusal("DELETE", sent) is not None) is refused
    assert LOOPBACK.refusal("GET", sent) is None  # reads are not state changes


def test_loopback_addresses() -> None:
    assert all(is_loopback_address(host) for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback_address(host) for host in ("0.0.0.0", "::", "10.0.0.1", "models.example"))
