"""The shared catalog: PostgreSQL (``MCP_CATALOG_URL=postgresql://user:password@host:port/db``), via psycopg 3.

Same rows and behaviour as the SQLite catalog. Registrations of one name from any number of
processes and machines serialize on a transaction-level advisory lock for that name, which makes
"highest integer alias + 1" safe; the primary key ``(name, version)`` and ``UNIQUE (name, number)``
refuse whatever slips past. The schema is versioned (:mod:`.postgres_schema`) and brought up to
date when a catalog is opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp2026ai.registry.catalogs.postgres_connection import connected
from mcp2026ai.registry.catalogs.postgres_schema import LOCK_NAMES, migrate
from mcp2026ai.registry.catalogs.sql import SqlCatalog
from mcp2026ai.registry.redaction import redacted_url


class PostgresCatalog(SqlCatalog):
    """:class:`~mcp2026ai.registry.catalog.Catalog` in a PostgreSQL database."""

    marker = "%s"
    annotation_order = "id"

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redacted_url(url)
        with connected(url, autocommit=True) as db:
            migrate(db)

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        with connected(self.url) as db:
            yield db

    def _serialize_registration(self, db: Any, name: str) -> None:
        db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMES, name))

    def _is_unique_violation(self, error: Exception) -> bool:
        from psycopg.errors import UniqueViolation

        return isinstance(error, UniqueViolation)
