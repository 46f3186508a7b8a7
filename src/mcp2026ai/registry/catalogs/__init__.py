"""Catalog backends: SQLite under MCP_HOME (default) or PostgreSQL (``MCP_CATALOG_URL``)."""

from __future__ import annotations

from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.registry.catalogs.sqlite import SQLiteCatalog

CATALOG_FILE = "registry.db"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def catalog_for(url: str | None, home: Path) -> Catalog:
    """``MCP_HOME/registry.db`` when ``url`` is unset, a ``sqlite:///path`` file, or PostgreSQL."""
    if not url:
        return SQLiteCatalog(home / CATALOG_FILE)
    if url.startswith("sqlite:///"):
        return SQLiteCatalog(Path(url.removeprefix("sqlite://")))
    if url.startswith(POSTGRES_SCHEMES):
        from mcp2026ai.registry.catalogs.postgres import PostgresCatalog

        return PostgresCatalog(url)
    raise InvalidArgumentError(
        f"MCP_CATALOG_URL {url.split(':')[0]}://...: unsupported scheme; "
        "use postgresql://user@host/db (or leave it unset)"
    )


__all__ = ["CATALOG_FILE", "Catalog", "SQLiteCatalog", "catalog_for"]
