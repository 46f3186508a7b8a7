"""The v2 infer route taken directly, in front of the Starlette app.

Every request through Starlette passes its error middleware, the user middleware (authentication,
gzip), the exception middleware and a match against each of the ~50 routes before its handler runs:
about a quarter of the event loop's time per inference request in a profile at capacity. Inference
is nearly all of a busy server's traffic, and under overload the one event loop is what it runs out
of, so :class:`DirectInfer` sends a ``POST`` to ``/v2/models/{model}[/versions/{version}]/infer``
straight to the same handler, with the same answers:

- the Host and cross-site checks of :class:`~mcp2026ai.server.http.site_guard.SiteGuard` (403);
- authentication as :class:`~mcp2026ai.server.http.auth.BearerAuthMiddleware` does it (``infer``
  scope; 401/403 with the v2 error JSON; the principal left in the request's state);
- a domain error answered by its status, anything unexpected by a logged 500 JSON
  (``internal server error: <kind>``), as the app's exception handlers do;
- the response gzip-compressed for a client that accepts it, by Starlette's own ``GZipMiddleware``
  (tritonclient's ``response_compression``; httpx asks for it by default);
- any other method, or a server mounted under a root path, takes the ordinary route (Starlette
  answers 405 and handles the root path).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.datastructures import Headers
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp2026ai.errors import MCPError, PermissionDeniedError
from mcp2026ai.security import Authenticator
from mcp2026ai.security import Scope as TokenScope
from mcp2026ai.server.http.auth import authenticate_scope
from mcp2026ai.server.http.errors import error_response, unexpected_error
from mcp2026ai.server.http.paths import infer_target
from mcp2026ai.server.http.site_guard import SiteGuard

Handler = Callable[[Request], Awaitable[Response]]


class DirectInfer:
    """ASGI app: v2 infer requests to ``infer``, everything else to ``app``."""

    def __init__(
        self,
        app: ASGIApp,
        infer: Handler,
        authenticator: Authenticator | None = None,
        gzip_minimum_bytes: int = 1024,
        guard: SiteGuard | None = None,
    ) -> None:
        self.app = app
        self.guard = guard
        self.infer = infer
        self.authenticator = authenticator
        self.gzip_minimum_bytes = gzip_minimum_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = _direct_target(scope)
        if target is None:
            await self.app(scope, receive, send)
            return
        model, version = target
        scope["path_params"] = {"model": model} if version is None else {"model": model, "version": version}
        response: ASGIApp = await self._answer(scope, receive)
        if "gzip" in Headers(scope=scope).get("accept-encoding", "").lower():
            response = GZipMiddleware(response, minimum_size=self.gzip_minimum_bytes)
        await response(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive) -> Response:
        try:
            refused = self.guard.refusal("POST", scope["headers"]) if self.guard is not None else None
            if refused is not None:
                raise PermissionDeniedError(refused)
            if self.authenticator is not None:
                authenticate_scope(self.authenticator, scope, TokenScope.INFER)
            return await self.infer(Request(scope, receive))
        except MCPError as exc:
            return error_response(exc)
        except Exception as exc:  # noqa: BLE001 - a bug: logged with its traceback by unexpected_error
            return unexpected_error("POST", scope["path"], exc)


def _direct_target(scope: Scope) -> tuple[str, str | None] | None:
    """(model, version) of a request the direct route takes; None for the app's."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    return infer_target(scope["path"])
