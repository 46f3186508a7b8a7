"""The web console at ``/ui``: server-rendered pages (Jinja2) made live with htmx, charts drawn by
Chart.js; both vendored under ``static/vendor`` (no CDN, no Node at run time). See docs/console.md."""

from __future__ import annotations

from mcp2026ai.server.http.ui.routes import ui_routes

__all__ = ["ui_routes"]
