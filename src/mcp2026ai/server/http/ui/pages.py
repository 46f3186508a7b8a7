"""The console's pages: shells that hold no data (open even under ``--auth``; they ask for a
token) and the HTML fragments htmx loads into them with the token (``/ui/fragments/...``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.auth import caller_details, principal_of
from mcp2026ai.server.http.ui.audit_view import audit_view
from mcp2026ai.server.http.ui.models_view import candidate_points, model_detail, model_page
from mcp2026ai.server.http.ui.playground_view import max_upload_bytes, playground_models
from mcp2026ai.server.http.ui.rollouts_view import apply_action, rollout_rows, with_history
from mcp2026ai.server.http.ui.templating import render

P = ParamSpec("P")
T = TypeVar("T")

PAGES = {
    "models": "Models",
    "live": "Live",
    "rollouts": "Rollouts",
    "playground": "Playground",
    "audit": "Audit",
}


class ConsolePages:
    def __init__(self, plane: DataPlane, config: ServerConfig) -> None:
        self.plane = plane
        self.auth_required = config.security.authenticator() is not None
        self.max_upload_bytes = max_upload_bytes(config)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-console")
        """The console's catalog and audit-log reads, one at a time, on a thread of their own: never
        on the event loop, never in the default executor that unbatched models run inference in."""

    async def _off_loop(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, lambda: function(*args, **kwargs))

    # shells ---------------------------------------------------------------------------------
    async def home(self, request: Request) -> Response:
        return RedirectResponse("/ui/models", status_code=307)

    async def page(self, request: Request) -> HTMLResponse:
        name = request.url.path.removeprefix("/ui/")
        return self._shell(name, PAGES[name])

    async def model_page(self, request: Request) -> HTMLResponse:
        model = request.path_params["model"]
        return self._shell("model", f"Model {model}", model=model, version=request.query_params.get("version", ""))

    def _shell(self, page: str, title: str, **context: str) -> HTMLResponse:
        shell = {"page": page, "title": title, "pages": PAGES, "auth_required": self.auth_required, **context}
        return render(f"{page}.html", **shell)

    # fragments ------------------------------------------------------------------------------
    async def models_table(self, request: Request) -> HTMLResponse:
        query = request.query_params
        page = await self._off_loop(
            model_page, self.plane, query.get("q", ""), query.get("stage", ""), _page_number(query.get("page", "1"))
        )
        return render("fragments/models_table.html", listing=page, q=query.get("q", ""), stage=query.get("stage", ""))

    async def model_detail(self, request: Request) -> HTMLResponse:
        version = request.query_params.get("version") or None
        detail = await self._off_loop(model_detail, self.plane, request.path_params["model"], version)
        points = candidate_points(detail["decision"]) if detail["decision"] else []
        return render("fragments/model_detail.html", detail=detail, points=points)

    async def rollouts(self, request: Request) -> HTMLResponse:
        rows = await self._off_loop(with_history, self.plane, rollout_rows(self.plane))
        return render("fragments/rollouts.html", rollouts=rows, message="")

    async def rollout_action(self, request: Request) -> HTMLResponse:
        name, action = request.path_params["model"], request.path_params["action"]
        actor, details = principal_of(request).actor, caller_details(request)
        updated = await self._off_loop(apply_action, self.plane, name, action, actor, details)
        self.plane.traffic.manager.adopt(name, updated)
        rows = await self._off_loop(with_history, self.plane, rollout_rows(self.plane))
        return render("fragments/rollouts.html", rollouts=rows, message=f"{action} of {name} done by {actor}")

    async def audit(self, request: Request) -> HTMLResponse:
        if self.plane.repository.audit is None:
            return HTMLResponse("<p>This server keeps no audit log.</p>")
        actor, action = request.query_params.get("actor", ""), request.query_params.get("action", "")
        view = await self._off_loop(audit_view, self.plane.repository.audit, actor, action)
        return render("fragments/audit.html", view=view, actor=actor, action=action)

    async def playground(self, request: Request) -> HTMLResponse:
        models = playground_models(self.plane)
        return render("fragments/playground.html", models=models, max_upload_bytes=self.max_upload_bytes)


def _page_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidArgumentError(f"page must be a whole number, got {text[:40]!r}") from None
