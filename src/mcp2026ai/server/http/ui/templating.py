"""The console's Jinja2 environment: templates shipped in the package, HTML autoescaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.responses import HTMLResponse

from mcp2026ai import __version__

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

_environment = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.globals["asset_version"] = __version__


def render(template: str, **context: Any) -> HTMLResponse:
    """A template rendered as an HTML response that no cache keeps (it shows live state)."""
    html = _environment.get_template(template).render(**context)
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})
