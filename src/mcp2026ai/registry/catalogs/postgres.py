"""The shared catalog: PostgreSQL (``MCP_CATALOG_URL=postgresql://user:password@host:port/db``), via psycopg 3.

Same rows and behaviour as the SQLite catalog. Registrations of one name from any number of
processes and machines serialize on a transaction-level advisory lock for that name, which makes
"highest integer alias + 1" safe; the primary key ``(name, version)`` and ``UNIQUE (name, number)``
refuse whatever slips past. The schema is versioned (:mod:`.postgres_schema`) and brought up to
date when a catalog is opened.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from mcp2026ai.errors import AlreadyExistsError, NotFoundError
from mcp2026ai.registry.catalog import Annotation, AuditIntent, PendingAudit
from mcp2026ai.registry.catalogs.postgres_connection import connected
from mcp2026ai.registry.catalogs.postgres_schema import LOCK_NAMES, migrate
from mcp2026ai.registry.catalogs.rows import COLUMNS, PENDING_COLUMNS, from_row, now, to_row
from mcp2026ai.registry.records import ModelVersion, Stage
from mcp2026ai.registry.redaction import redacted_url

_VALUES = ", ".join(["%s"] * len(COLUMNS.split(",")))


class PostgresCatalog:
    """:class:`~mcp2026ai.registry.catalog.Catalog` in a PostgreSQL database."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = redacted_url(url)
        with connected(url, autocommit=True) as db:
            migrate(db)

    @contextmanager
    def _connect(self) -> Iterator[Any]:
        with connected(self.url) as db:
            yield db

    def insert(
        self, record: ModelVersion, intent: AuditIntent | None = None, number: int | None = None
    ) -> ModelVersion:
        from psycopg.errors import UniqueViolation

        try:
            with self._connect() as db:
                db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_NAMES, record.name))
                if number is None:
                    row = db.execute(
                        "SELECT MAX(number) FROM model_versions WHERE name = %s", (record.name,)
                    ).fetchone()
                    number = int(row[0] or 0) + 1
                record = record.model_copy(update={"number": number})
                db.execute(f"INSERT INTO model_versions ({COLUMNS}) VALUES ({_VALUES})", to_row(record))
                if intent is not None:
                    db.execute(
                        f"INSERT INTO pending_audit ({PENDING_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                        (intent.id, intent.action, intent.actor, record.ref, json.dumps(intent.details), now()),
                    )
        except UniqueViolation:
            alias = f" or integer alias {number}" if number is not None else ""
            raise AlreadyExistsError(f"model {record.name!r} already has version {record.version}{alias}") from None
        return record

    def pending_audits(self) -> list[PendingAudit]:
        with self._connect() as db:
            rows = db.execute(f"SELECT {PENDING_COLUMNS} FROM pending_audit ORDER BY created_at").fetchall()
        return [
            PendingAudit(
                AuditIntent(row[0], row[1], row[2], json.loads(row[4])), row[3], datetime.fromisoformat(row[5])
            )
            for row in rows
        ]

    def clear_audit(self, intent_id: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM pending_audit WHERE id = %s", (intent_id,))

    def get(self, name: str, version: str) -> ModelVersion:
        return self._one(name, "version", version)

    def get_by_number(self, name: str, number: int) -> ModelVersion:
        return self._one(name, "number", number)

    def _one(self, name: str, column: str, value: str | int) -> ModelVersion:
        with self._connect() as db:
            row = db.execute(
                f"SELECT {COLUMNS} FROM model_versions WHERE name = %s AND {column} = %s", (name, value)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"model {name!r} has no version {value}")
        return from_row(row)

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        query = f"SELECT {COLUMNS} FROM model_versions"
        args: tuple[str, ...] = ()
        if name is not None:
            query += " WHERE name = %s"
            args = (name,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY name, created_at", args).fetchall()
        return [from_row(row) for row in rows]

    def set_stage(self, name: str, version: str, stage: Stage) -> None:
        with self._connect() as db:
            updated = db.execute(
                "UPDATE model_versions SET stage = %s WHERE name = %s AND version = %s", (stage.value, name, version)
            ).rowcount
        if not updated:
            raise NotFoundError(f"model {name!r} has no version {version}")

    def delete(self, name: str, version: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM model_versions WHERE name = %s AND version = %s", (name, version))
            db.execute("DELETE FROM annotations WHERE name = %s AND version = %s", (name, version))

    def digests(self) -> set[str]:
        with self._connect() as db:
            return {row[0] for row in db.execute("SELECT DISTINCT digest FROM model_versions").fetchall()}

    def digest_in_use(self, digest: str) -> bool:
        with self._connect() as db:
            found = db.execute("SELECT 1 FROM model_versions WHERE digest = %s LIMIT 1", (digest,)).fetchone()
        return found is not None

    def annotate(self, name: str, version: str, kind: str, payload: dict[str, object], at: datetime) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO annotations (name, version, kind, created_at, payload) VALUES (%s, %s, %s, %s, %s)",
                (name, version, kind, at.isoformat(), json.dumps(payload, sort_keys=True)),
            )

    def annotated(self, kind: str) -> set[tuple[str, str]]:
        """Every ``(name, version)`` holding at least one annotation of ``kind``, in one query (the
        console's model table marks the signed versions of a thousand models with it)."""
        with self._connect() as db:
            rows = db.execute("SELECT DISTINCT name, version FROM annotations WHERE kind = %s", (kind,)).fetchall()
        return {(str(row[0]), str(row[1])) for row in rows}

    def annotations(
        self, name: str, kind: str, version: str | None = None
    ) -> list[tuple[str, datetime, dict[str, object]]]:
        query = "SELECT version, created_at, payload FROM annotations WHERE name = %s AND kind = %s"
        args: tuple[str, ...] = (name, kind)
        if version is not None:
            query += " AND version = %s"
            args += (version,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY id", args).fetchall()
        return [(row[0], datetime.fromisoformat(row[1]), json.loads(row[2])) for row in rows]

    def all_annotations(self, name: str) -> list[Annotation]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT version, kind, created_at, payload FROM annotations WHERE name = %s ORDER BY id", (name,)
            ).fetchall()
        return [Annotation(row[0], row[1], datetime.fromisoformat(row[2]), json.loads(row[3])) for row in rows]
