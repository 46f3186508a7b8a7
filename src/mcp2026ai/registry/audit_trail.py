"""Every servable version has its ``model.register`` entry in the audit log, even across a crash.

The catalog (SQLite or PostgreSQL) and the audit log (a JSONL file, or a table beside a PostgreSQL
catalog) are written in separate transactions, so a
registration goes through an outbox:

1. while holding the audit log's lock, the catalog row and an :class:`AuditIntent` (the entry owed)
   are inserted in one SQLite transaction;
2. the entry is appended to the log (its details carry the intent's id);
3. the intent is cleared.

A process killed after (1) leaves the intent behind. Because every writer holds the log's lock from
(1) to (3), an intent seen by someone holding that lock belongs to a dead registration:
:func:`recover_pending` (run by the next registration and at server start) appends its entry,
marked ``recovered``, unless the log already has it (killed between 2 and 3).

Versions with no entry and no intent (registered with no audit log configured, or by a release that
wrote the entry after the insert and was killed in between) are found by :func:`unaudited_versions`:
``mcp audit verify`` names them and fails; ``mcp audit verify --repair`` records them as recovered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.registry.records import ModelVersion
from mcp2026ai.security.audit import Appender, AuditChain

REGISTER_ACTION = "model.register"
RECOVERY_ACTOR = "system:audit-recovery"


@dataclass(frozen=True)
class Unaudited:
    """A servable version with no ``model.register`` entry; ``interrupted`` when its registration
    left an intent (it was killed between the catalog insert and the audit append)."""

    record: ModelVersion
    interrupted: bool

    def describe(self) -> str:
        return f"{self.record.ref} (registration interrupted)" if self.interrupted else self.record.ref


def recover_pending(catalog: Catalog, log: AuditChain, append: Appender) -> list[dict[str, Any]]:
    """Append the entries of intents their writers never cleared; call with ``log.holding()`` held."""
    pending = catalog.pending_audits()
    if not pending:
        return []
    written = {_intent_of(entry) for entry in log.entries()}
    recovered = []
    for row in pending:
        if row.intent.id not in written:
            details = {**row.intent.details, "intent": row.intent.id, "recovered": True}
            recovered.append(append(row.intent.action, row.intent.actor, row.target, details))
        catalog.clear_audit(row.intent.id)
    return recovered


def recover(catalog: Catalog, log: AuditChain) -> list[dict[str, Any]]:
    """:func:`recover_pending` under the log's lock (at server start)."""
    with log.holding() as append:
        return recover_pending(catalog, log, append)


def unaudited_versions(catalog: Catalog, log: AuditChain) -> list[Unaudited]:
    """Catalog versions with no ``model.register`` entry for their name, version and digest."""
    registered = {
        (entry.get("target"), _digest_of(entry)) for entry in log.entries() if entry.get("action") == REGISTER_ACTION
    }
    interrupted = {row.target for row in catalog.pending_audits() if row.intent.action == REGISTER_ACTION}
    return [
        Unaudited(record, record.ref in interrupted)
        for record in catalog.versions()
        if (record.ref, record.digest) not in registered and (record.ref, None) not in registered
    ]


def repair(catalog: Catalog, log: AuditChain) -> list[dict[str, Any]]:
    """Record every missing ``model.register`` entry, marked ``recovered``; returns what was appended."""
    with log.holding() as append:
        appended = recover_pending(catalog, log, append)
        for missing in unaudited_versions(catalog, log):
            details = {"digest": missing.record.digest, "recovered": True, "reason": "no register entry found"}
            appended.append(append(REGISTER_ACTION, RECOVERY_ACTOR, missing.record.ref, details))
    return appended


def _intent_of(entry: dict[str, Any]) -> Any:
    details = entry.get("details")
    return details.get("intent") if isinstance(details, dict) else None


def _digest_of(entry: dict[str, Any]) -> Any:
    details = entry.get("details")
    return details.get("digest") if isinstance(details, dict) else None
