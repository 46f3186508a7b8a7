"""The catalog's queries, once, for both SQL backends (SQLite and PostgreSQL).

The two differ only in how they connect, their parameter marker (``?`` / ``%s``), the column that
orders annotations (SQLite's ``rowid``, PostgreSQL's ``id``), how :meth:`SqlCatalog.insert` keeps
concurrent registrations of one name apart (an immediate write transaction / an advisory lock) and
which exception a unique violation raises. Queries are written with ``?`` and given the backend's
marker by :meth:`SqlCatalog._query`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

from mcp2026ai.errors import AlreadyExistsError, NotFoundError
from mcp2026ai.registry.catalog import Annotation, AuditIntent, PendingAudit
from mcp2026ai.registry.catalogs.rows import COLUMNS, PENDING_COLUMNS, from_row, now, to_row
from mcp2026ai.registry.records import ModelVersion, Stage


def _markers(columns: str) -> str:
    return ", ".join(["?"] * len(columns.split(",")))


_INSERT_VERSION = f"INSERT INTO model_versions ({COLUMNS}) VALUES ({_markers(COLUMNS)})"
_INSERT_PENDING = f"INSERT INTO pending_audit ({PENDING_COLUMNS}) VALUES ({_markers(PENDING_COLUMNS)})"


class SqlCatalog(ABC):
    """:class:`~mcp2026ai.registry.catalog.Catalog` over a DB-API connection; subclasses say how to
    connect and how an insert is serialized."""

    location: str
    marker: ClassVar[str] = "?"
    """The backend's parameter marker."""
    annotation_order: ClassVar[str] = "rowid"
    """The column that orders annotations as they were written."""

    @abstractmethod
    def _connect(self) -> AbstractContextManager[Any]:
        """A connection inside one transaction: committed on leaving, rolled back on an error."""

    @abstractmethod
    def _serialize_registration(self, db: Any, name: str) -> None:
        """Hold, until the transaction ends, what keeps other registrations of ``name`` out."""

    @abstractmethod
    def _is_unique_violation(self, error: Exception) -> bool:
        """Whether ``error`` is the backend's unique-constraint violation."""

    def _query(self, sql: str) -> str:
        return sql if self.marker == "?" else sql.replace("?", self.marker)

    def _execute(self, db: Any, sql: str, args: tuple[object, ...] = ()) -> Any:
        return db.execute(self._query(sql), args)

    def _rows(self, sql: str, args: tuple[object, ...] = ()) -> list[Any]:
        with self._connect() as db:
            return list(self._execute(db, sql, args).fetchall())

    def insert(
        self, record: ModelVersion, intent: AuditIntent | None = None, number: int | None = None
    ) -> ModelVersion:
        """Store a new version; its Triton-style integer alias (1, 2, 3, ...) is the next free one for
        its name, chosen inside the insert's own write transaction so concurrent registrations of one
        name (other processes and machines included) never share an alias. ``intent`` (the audit entry
        owed for the registration) is stored in the same transaction. Returns the record with its number."""
        try:
            with self._connect() as db:
                self._serialize_registration(db, record.name)
                if number is None:
                    row = self._execute(db, "SELECT MAX(number) FROM model_versions WHERE name = ?", (record.name,))
                    number = int(row.fetchone()[0] or 0) + 1
                record = record.model_copy(update={"number": number})
                self._execute(db, _INSERT_VERSION, to_row(record))
                if intent is not None:
                    audit = (intent.id, intent.action, intent.actor, record.ref, json.dumps(intent.details), now())
                    self._execute(db, _INSERT_PENDING, audit)
        except Exception as exc:
            if not self._is_unique_violation(exc):
                raise
            alias = f" or integer alias {number}" if number is not None else ""
            raise AlreadyExistsError(f"model {record.name!r} already has version {record.version}{alias}") from None
        return record

    def pending_audits(self) -> list[PendingAudit]:
        """Audit entries owed by catalog changes whose writer has not (yet) cleared them, oldest first."""
        rows = self._rows(f"SELECT {PENDING_COLUMNS} FROM pending_audit ORDER BY created_at")
        return [
            PendingAudit(
                AuditIntent(row[0], row[1], row[2], json.loads(row[4])), row[3], datetime.fromisoformat(row[5])
            )
            for row in rows
        ]

    def clear_audit(self, intent_id: str) -> None:
        """The intent's entry is in the audit log: forget it."""
        with self._connect() as db:
            self._execute(db, "DELETE FROM pending_audit WHERE id = ?", (intent_id,))

    def get(self, name: str, version: str) -> ModelVersion:
        return self._one(name, "version", version)

    def get_by_number(self, name: str, number: int) -> ModelVersion:
        return self._one(name, "number", number)

    def _one(self, name: str, column: str, value: str | int) -> ModelVersion:
        """The version of ``name`` whose ``column`` (version or number) equals ``value``."""
        rows = self._rows(f"SELECT {COLUMNS} FROM model_versions WHERE name = ? AND {column} = ?", (name, value))
        if not rows:
            raise NotFoundError(f"model {name!r} has no version {value}")
        return from_row(rows[0])

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        query = f"SELECT {COLUMNS} FROM model_versions"
        args: tuple[str, ...] = ()
        if name is not None:
            query += " WHERE name = ?"
            args = (name,)
        return [from_row(row) for row in self._rows(query + " ORDER BY name, created_at", args)]

    def set_stage(self, name: str, version: str, stage: Stage) -> None:
        with self._connect() as db:
            sql = "UPDATE model_versions SET stage = ? WHERE name = ? AND version = ?"
            updated = self._execute(db, sql, (stage.value, name, version)).rowcount
        if not updated:
            raise NotFoundError(f"model {name!r} has no version {version}")

    def delete(self, name: str, version: str) -> None:
        with self._connect() as db:
            self._execute(db, "DELETE FROM model_versions WHERE name = ? AND version = ?", (name, version))
            self._execute(db, "DELETE FROM annotations WHERE name = ? AND version = ?", (name, version))

    def digests(self) -> set[str]:
        """Every artifact digest some version names."""
        return {row[0] for row in self._rows("SELECT DISTINCT digest FROM model_versions")}

    def digest_in_use(self, digest: str) -> bool:
        return bool(self._rows("SELECT 1 FROM model_versions WHERE digest = ? LIMIT 1", (digest,)))

    def annotate(self, name: str, version: str, kind: str, payload: dict[str, object], at: datetime) -> None:
        with self._connect() as db:
            self._execute(
                db,
                "INSERT INTO annotations (name, version, kind, created_at, payload) VALUES (?, ?, ?, ?, ?)",
                (name, version, kind, at.isoformat(), json.dumps(payload, sort_keys=True)),
            )

    def annotated(self, kind: str) -> set[tuple[str, str]]:
        """Every ``(name, version)`` holding at least one annotation of ``kind``, in one query (the
        console's model table marks the signed versions of a thousand models with it)."""
        rows = self._rows("SELECT DISTINCT name, version FROM annotations WHERE kind = ?", (kind,))
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
        rows = self._rows(f"{query} ORDER BY {self.annotation_order}", args)
        return [(row[0], datetime.fromisoformat(row[1]), json.loads(row[2])) for row in rows]

    def all_annotations(self, name: str) -> list[Annotation]:
        query = "SELECT version, kind, created_at, payload FROM annotations WHERE name = ?"
        rows = self._rows(f"{query} ORDER BY {self.annotation_order}", (name,))
        return [Annotation(row[0], row[1], datetime.fromisoformat(row[2]), json.loads(row[3])) for row in rows]
