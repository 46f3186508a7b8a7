"""The default catalog: a SQLite file under MCP_HOME (WAL; one writer at a time across processes)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from mcp2026ai.errors import AlreadyExistsError, NotFoundError
from mcp2026ai.registry.catalog import Annotation, AuditIntent, PendingAudit
from mcp2026ai.registry.catalogs.rows import COLUMNS, PENDING_COLUMNS, from_row, now, to_row
from mcp2026ai.registry.records import ModelVersion, Stage

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


class SQLiteCatalog:
    """:class:`~mcp2026ai.registry.catalog.Catalog` in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
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

    def insert(
        self, record: ModelVersion, intent: AuditIntent | None = None, number: int | None = None
    ) -> ModelVersion:
        """Store a new version; its Triton-style integer alias (1, 2, 3, ...) is the next free one for
        its name, chosen inside the insert's own write transaction so concurrent registrations of one
        name (other processes included) never share an alias. ``intent`` (the audit entry owed for
        the registration) is stored in the same transaction. Returns the record with its number."""
        try:
            with self._connect() as db:
                db.execute("BEGIN IMMEDIATE")
                if number is None:
                    row = db.execute("SELECT MAX(number) FROM model_versions WHERE name = ?", (record.name,)).fetchone()
                    number = int(row[0] or 0) + 1
                record = record.model_copy(update={"number": number})
                db.execute(f"INSERT INTO model_versions ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", to_row(record))
                if intent is not None:
                    db.execute(
                        f"INSERT INTO pending_audit ({PENDING_COLUMNS}) VALUES (?,?,?,?,?,?)",
                        (intent.id, intent.action, intent.actor, record.ref, json.dumps(intent.details), now()),
                    )
        except sqlite3.IntegrityError:
            alias = f" or integer alias {number}" if number is not None else ""
            raise AlreadyExistsError(f"model {record.name!r} already has version {record.version}{alias}") from None
        return record

    def pending_audits(self) -> list[PendingAudit]:
        """Audit entries owed by catalog changes whose writer has not (yet) cleared them, oldest first."""
        with self._connect() as db:
            rows = db.execute(f"SELECT {PENDING_COLUMNS} FROM pending_audit ORDER BY created_at").fetchall()
        return [
            PendingAudit(
                AuditIntent(row[0], row[1], row[2], json.loads(row[4])), row[3], datetime.fromisoformat(row[5])
            )
            for row in rows
        ]

    def clear_audit(self, intent_id: str) -> None:
        """The intent's entry is in the audit log: forget it."""
        with self._connect() as db:
            db.execute("DELETE FROM pending_audit WHERE id = ?", (intent_id,))

    def get_by_number(self, name: str, number: int) -> ModelVersion:
        return self._one(name, "number", number)

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        query = f"SELECT {COLUMNS} FROM model_versions"
        args: tuple[str, ...] = ()
        if name is not None:
            query += " WHERE name = ?"
            args = (name,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY name, created_at", args).fetchall()
        return [from_row(row) for row in rows]

    def get(self, name: str, version: str) -> ModelVersion:
        return self._one(name, "version", version)

    def _one(self, name: str, column: str, value: str | int) -> ModelVersion:
        """The version of ``name`` whose ``column`` (version or number) equals ``value``."""
        with self._connect() as db:
            row = db.execute(
                f"SELECT {COLUMNS} FROM model_versions WHERE name = ? AND {column} = ?", (name, value)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"model {name!r} has no version {value}")
        return from_row(row)

    def set_stage(self, name: str, version: str, stage: Stage) -> None:
        with self._connect() as db:
            updated = db.execute(
                "UPDATE model_versions SET stage = ? WHERE name = ? AND version = ?",
                (stage.value, name, version),
            ).rowcount
        if not updated:
            raise NotFoundError(f"model {name!r} has no version {version}")

    def delete(self, name: str, version: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM model_versions WHERE name = ? AND version = ?", (name, version))
            db.execute("DELETE FROM annotations WHERE name = ? AND version = ?", (name, version))

    def digests(self) -> set[str]:
        """Every artifact digest some version names."""
        with self._connect() as db:
            return {row[0] for row in db.execute("SELECT DISTINCT digest FROM model_versions")}

    def digest_in_use(self, digest: str) -> bool:
        with self._connect() as db:
            return db.execute("SELECT 1 FROM model_versions WHERE digest = ? LIMIT 1", (digest,)).fetchone() is not None

    def annotate(self, name: str, version: str, kind: str, payload: dict[str, object], at: datetime) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO annotations (name, version, kind, created_at, payload) VALUES (?,?,?,?,?)",
                (name, version, kind, at.isoformat(), json.dumps(payload, sort_keys=True)),
            )

    def annotated(self, kind: str) -> set[tuple[str, str]]:
        """Every ``(name, version)`` holding at least one annotation of ``kind``, in one query (the
        console's model table marks the signed versions of a thousand models with it)."""
        with self._connect() as db:
            rows = db.execute("SELECT DISTINCT name, version FROM annotations WHERE kind = ?", (kind,)).fetchall()
        return {(str(row[0]), str(row[1])) for row in rows}

    def annotations(
        self, name: str, kind: str, version: str | None = None
    ) -> list[tuple[str, datetime, dict[str, object]]]:
        """``(version, time, payload)`` rows of one kind for a model, oldest first."""
        query = "SELECT version, created_at, payload FROM annotations WHERE name = ? AND kind = ?"
        args: tuple[str, ...] = (name, kind)
        if version is not None:
            query += " AND version = ?"
            args += (version,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY rowid", args).fetchall()
        return [(row[0], datetime.fromisoformat(row[1]), json.loads(row[2])) for row in rows]

    def all_annotations(self, name: str) -> list[Annotation]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT version, kind, created_at, payload FROM annotations WHERE name = ? ORDER BY rowid", (name,)
            ).fetchall()
        return [Annotation(row[0], row[1], datetime.fromisoformat(row[2]), json.loads(row[3])) for row in rows]
