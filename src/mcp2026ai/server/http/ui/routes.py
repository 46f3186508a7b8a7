"""The console's routes, as one list the HTTP app adds to its own."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.ui import api
from mcp2026ai.server.http.ui.pages import PAGES, ConsolePages
from mcp2026ai.server.http.ui.templating import STATIC


def ui_routes(plane: DataPlane, config: ServerConfig) -> list[BaseRoute]:
    """``/ui`` pages, their fragments, the JSON endpoints and the static files (htmx, Chart.js)."""
    pages = ConsolePages(plane, config)
    fragments = "/ui/fragments"
    return [
        Route("/ui", pages.home, methods=["GET"]),
        *[Route(f"/ui/{name}", pages.page, methods=["GET"]) for name in PAGES],
        Route("/ui/models/{model}", pages.model_page, methods=["GET"]),
        Route(f"{fragments}/models", pages.models_table, methods=["GET"]),
        Route(f"{fragments}/models/{{model}}", pages.model_detail, methods=["GET"]),
        Route(f"{fragments}/rollouts", pages.rollouts, methods=["GET"]),
        Route(f"{fragments}/rollouts/{{model}}/{{action}}", pages.rollout_action, methods=["POST"]),
        Route(f"{fragments}/audit", pages.audit, methods=["GET"]),
        Route(f"{fragments}/playground", pages.playground, methods=["GET"]),
        Route("/ui/api/session", api.session, methods=["GET"]),
        Route("/ui/api/live", api.live, methods=["GET"]),
        Mount("/ui/static", app=StaticFiles(directory=STATIC), name="ui-static"),
    ]
