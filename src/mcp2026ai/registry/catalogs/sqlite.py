"""The default catalog: a SQLite file under MCP_HOME (WAL; one writer at a time across processes)."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp2026ai.registry.catalogs.sql import SqlCatalog
from mcp2026ai.security.files import private_dir

_SCHEMA = """
CREATE TABLE IF NOT EXISTS model_versions (
    name          TEXT NOT NULL,
    version       TEXT NOT NULL,
    number        INTEGER NOT NULL,
    stage         TEXT NOT NULL,
    format        TEXT NOT NULL,
    digest        TEXT NOT NULL,
    signature     TEXT NOT NULL,
    contract      TEXT,
    tags          TEXT NOT NULL,
    preprocessing TEXT,
    parent        TEXT,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS annotations (
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    payload    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS annotations_by_version ON annotations (name, version, kind);
CREATE TABLE IF NOT EXISTS pending_audit (
    id         TEXT PRIMARY KEY,
    action     TEXT NOT NULL,
    actor      TEXT NOT NULL,
    target     TEXT NOT NULL,
    details    TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""
_UNIQUE_NUMBERS = "CREATE UNIQUE INDEX IF NOT EXISTS model_numbers ON model_versions (name, number)"

log = logging.getLogger(__name__)


class SQLiteCatalog(SqlCatalog):
    """:class:`~mcp2026ai.registry.catalog.Catalog` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        private_dir(path.parent)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # private from its first byte (WAL files follow)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        try:
            with self._connect() as db:
                db.execute(_UNIQUE_NUMBERS)
        except sqlite3.IntegrityError:  # a registry written before numbers were unique may repeat one
            log.warning("%s: some model has two versions with one integer alias; aliases stay ambiguous", path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def _serialize_registration(self, db: Any, name: str) -> None:
        db.execute("BEGIN IMMEDIATE")  # the write lock: one registration at a time, across processes

    def _is_unique_violation(self, error: Exception) -> bool:
        return isinstance(error, sqlite3.IntegrityError)
