"""Bearer-token authentication for the HTTP server, as ASGI middleware in front of the routes.

Which scope a path needs (as Triton/KServe deployments expect):

- open: the health probes ``/v2/health/live``, ``/v2/health/ready``, ``/healthz``, ``/metrics`` and the
  aliases ``/health`` and ``/ping`` (server/http/probes.py); the API description ``/openapi.json``
  and its Swagger UI ``/docs``, ``/docs/static/`` (no data: server/http/openapi/routes.py)
  (Kubernetes probes and Prometheus scrapers carry no tokens);
- ``manage``: everything under ``/v2/repository/models/`` (load, unload), the management API
  ``/v2/manage/`` (server/http/manage.py), and vLLM's ``/v1/load_lora_adapter`` and
  ``/v1/unload_lora_adapter`` (server/http/openai/lora.py);
- ``pull``: a served model's ``/package`` and ``/artifact`` (what an edge device downloads);
- ``shm``: system and CUDA shared memory register, unregister and status (maps files under /dev/shm);
- the web console (``/ui``): its page shells and static files are open (they hold no data and ask
  for a token); its data (``/ui/api/``, ``/ui/fragments/``) needs ``infer``, its rollout actions and
  the audit log ``manage`` (:func:`console_scope`);
- ``infer``: everything else (inference, server and model metadata, config, statistics, the
  repository index, ``/v1/infer``), unknown paths included, so a 404 tells nothing to a stranger.

The authenticated :class:`Principal` is left in ``request.state.principal`` for the audit log.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp2026ai.errors import MCPError
from mcp2026ai.security import ANONYMOUS, Authenticator, Principal
from mcp2026ai.security import Scope as TokenScope
from mcp2026ai.server.api_groups import is_shared_memory_path
from mcp2026ai.server.http.errors import error_response
from mcp2026ai.server.http.probes import OPEN_PROBE_PATHS

OPEN_PATHS = frozenset(
    {"/v2/health/live", "/v2/health/ready", "/healthz", "/metrics", *OPEN_PROBE_PATHS, "/openapi.json", "/docs"}
)
OPEN_PREFIXES = ("/docs/static/",)
MANAGE_PREFIX = "/v2/repository/models/"
MANAGE_API_PREFIX = "/v2/manage/"
SETTINGS_PATHS = frozenset({"/v2/trace/setting", "/v2/logging"})
LORA_PATHS = frozenset({"/v1/load_lora_adapter", "/v1/unload_lora_adapter"})
"""vLLM's run-time adapter API: it registers and serves model versions, so it is management."""
PULL_SUFFIXES = ("/package", "/artifact")
CONSOLE_PREFIX = "/ui"
CONSOLE_DATA_PREFIXES = ("/ui/api/", "/ui/fragments/")
CONSOLE_ACTIONS_PREFIX = "/ui/fragments/rollouts/"
CONSOLE_AUDIT_PREFIXES = ("/ui/fragments/audit", "/ui/api/audit")


def required_scope(path: str, method: str = "GET") -> TokenScope | None:
    """The scope a request path needs; None for the open health and metrics endpoints. Changing the
    trace or log settings (POST) is management too."""
    if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
        return None
    if path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/"):
        return console_scope(path, method)
    settings = path in SETTINGS_PATHS or path.endswith("/trace/setting")
    if path.startswith((MANAGE_PREFIX, MANAGE_API_PREFIX)) or path in LORA_PATHS or (settings and method == "POST"):
        return TokenScope.MANAGE
    if is_shared_memory_path(path):
        return TokenScope.SHM
    if path.startswith("/v2/models/") and path.endswith(PULL_SUFFIXES):
        return TokenScope.PULL
    return TokenScope.INFER


def console_scope(path: str, method: str) -> TokenScope | None:
    """The web console's paths: shells and static files open, data ``infer``, rollout actions
    (POST) and the audit log ``manage``."""
    if not path.startswith(CONSOLE_DATA_PREFIXES):
        return None
    action = path.startswith(CONSOLE_ACTIONS_PREFIX) and method == "POST"
    manage = action or path.startswith(CONSOLE_AUDIT_PREFIXES)
    return TokenScope.MANAGE if manage else TokenScope.INFER


def authenticate_scope(authenticator: Authenticator, scope: Scope, needed: TokenScope) -> None:
    """Check the request's bearer token for ``needed`` (raises the domain error) and leave the
    principal in the request's state for the audit log."""
    principal = authenticator.authenticate(Headers(scope=scope).get("authorization"), needed)
    scope.setdefault("state", {})["principal"] = principal


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            needed = required_scope(scope["path"], scope.get("method", "GET"))
            if needed is not None:
                try:
                    authenticate_scope(self.authenticator, scope, needed)
                except MCPError as exc:
                    await error_response(exc)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def principal_of(request: Request) -> Principal:
    """Who sent the request (ANONYMOUS when auth is off)."""
    principal = getattr(request.state, "principal", ANONYMOUS)
    return principal if isinstance(principal, Principal) else ANONYMOUS


def caller_details(request: Request) -> dict[str, str]:
    """What the audit log records about where a management request came from."""
    peer = f"{request.client.host}:{request.client.port}" if request.client else ""
    return {"protocol": "http", "peer": peer}
