"""The console's JSON: who the token belongs to, and the Live page's snapshot of the server's own
metrics. Both are cheap (no catalog, no inference queue) so polling them costs inference nothing."""

from __future__ import annotations

import orjson
from starlette.requests import Request
from starlette.responses import Response

from mcp2026ai.server.http.auth import principal_of
from mcp2026ai.server.http.ui.live import live_snapshot


def _json(data: object) -> Response:
    return Response(orjson.dumps(data), media_type="application/json", headers={"Cache-Control": "no-store"})


async def session(request: Request) -> Response:
    """The token's name and scopes (``anonymous`` with every scope when auth is off)."""
    principal = principal_of(request)
    return _json({"name": principal.actor, "scopes": sorted(scope.value for scope in principal.scopes)})


async def live(request: Request) -> Response:
    return _json(live_snapshot())
