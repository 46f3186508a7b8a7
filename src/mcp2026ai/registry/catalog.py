"""The catalog of model versions (the registry's metadata; artifacts live in the store): one protocol,
implemented by :class:`~mcp2026ai.registry.catalogs.sqlite.SQLiteCatalog` (the default, a file under
MCP_HOME) and :class:`~mcp2026ai.registry.catalogs.postgres.PostgresCatalog` (``MCP_CATALOG_URL``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mcp2026ai.registry.records import ModelVersion, Stage


@dataclass(frozen=True)
class AuditIntent:
    """An audit entry owed for a catalog change, written in the change's own transaction (an outbox
    row): if the process dies before the entry reaches the audit log, the row survives and the
    entry is recovered from it (see :mod:`mcp2026ai.registry.audit_trail`)."""

    id: str
    action: str
    actor: str
    details: dict[str, Any]


@dataclass(frozen=True)
class PendingAudit:
    """An :class:`AuditIntent` not yet cleared, with the target its change gave it."""

    intent: AuditIntent
    target: str
    created_at: datetime


@dataclass(frozen=True)
class Annotation:
    """One free-form row attached to a version (a plan, a decision, a rollout, ...)."""

    version: str
    kind: str
    at: datetime
    payload: dict[str, object]


class Catalog(Protocol):
    """Model-version rows plus free-form annotations (plans, verifications, events) per version.

    Every method is its own transaction. :meth:`insert` picks the version's integer alias inside its
    write transaction, so concurrent registrations (other processes and machines included) never
    share one; a taken ``(name, version)`` raises AlreadyExistsError.
    """

    location: str
    """Where the rows live, for messages (a file, or a PostgreSQL URL without its password)."""

    def insert(
        self, record: ModelVersion, intent: AuditIntent | None = None, number: int | None = None
    ) -> ModelVersion:
        """Store a new version with integer alias ``number`` when given (a Triton repository's version
        directory), else the next free one for its name (and ``intent``, the audit entry owed for it, in
        the same transaction). Returns the record with its number."""
        ...

    def pending_audits(self) -> list[PendingAudit]: ...

    def clear_audit(self, intent_id: str) -> None: ...

    def get(self, name: str, version: str) -> ModelVersion: ...

    def get_by_number(self, name: str, number: int) -> ModelVersion: ...

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        """Versions ordered by name, then registration time."""
        ...

    def set_stage(self, name: str, version: str, stage: Stage) -> None: ...

    def delete(self, name: str, version: str) -> None: ...

    def digests(self) -> set[str]: ...

    def digest_in_use(self, digest: str) -> bool: ...

    def annotate(self, name: str, version: str, kind: str, payload: dict[str, object], at: datetime) -> None: ...

    def annotated(self, kind: str) -> set[tuple[str, str]]:
        """Every ``(name, version)`` holding at least one annotation of ``kind``, in one query."""
        ...

    def annotations(
        self, name: str, kind: str, version: str | None = None
    ) -> list[tuple[str, datetime, dict[str, object]]]:
        """``(version, time, payload)`` rows of one kind for a model, oldest first."""
        ...

    def all_annotations(self, name: str) -> list[Annotation]:
        """Every annotation of a model, oldest first (to copy a registry)."""
        ...
