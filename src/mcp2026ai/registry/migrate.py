"""Copy a local registry into shared stores (``mcp registry migrate``).

Objects are copied by name (encrypted ones stay encrypted), each plaintext one checked against its
digest first. Versions keep their version, stage, tags and annotations; a version already in the
target with the same artifact is skipped, one with another artifact stops the migration before
anything is written. The audit chain comes along: into an empty target chain it is copied entry for
entry (the same hashes, so it verifies as before); otherwise each copied version gets a
``model.register`` entry marked ``migrated``. A ``registry.migrate`` entry closes the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp2026ai.errors import AlreadyExistsError, IntegrityError, NotFoundError
from mcp2026ai.registry.audit_trail import REGISTER_ACTION
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.records import ModelVersion
from mcp2026ai.registry.store import ENCRYPTED_SUFFIX
from mcp2026ai.security.audit import AuditChain

MIGRATE_ACTION = "registry.migrate"
_DIGEST_CHARS = 64


@dataclass
class MigrationReport:
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    objects: int = 0
    audit_adopted: int = 0
    audit_appended: int = 0


def migrate_registry(
    source: ModelRegistry, source_audit: AuditChain, target: ModelRegistry, target_audit: AuditChain, actor: str
) -> MigrationReport:
    """Copy ``source`` (objects, versions, annotations, audit chain) into ``target``."""
    report = MigrationReport()
    chain = source_audit.verify()
    if not chain.ok:
        raise IntegrityError(f"{source_audit.location}: audit chain broken at {chain.reason}; nothing migrated")
    todo = _versions_to_copy(source, target, report)
    report.objects = _copy_objects(source, target)
    for record in todo:
        target.catalog.insert(record)
        report.copied.append(record.ref)
    _copy_annotations(source, target, todo)
    _carry_audit(source, source_audit, target_audit, todo, report)
    details = {"from": source.store.location, "versions": len(report.copied), "objects": report.objects}
    target_audit.record(MIGRATE_ACTION, actor, target.catalog.location, details)
    return report


def _versions_to_copy(source: ModelRegistry, target: ModelRegistry, report: MigrationReport) -> list[ModelVersion]:
    """Source versions the target lacks (oldest alias first); refuses before any write on a conflict."""
    todo = []
    for record in sorted(source.catalog.versions(), key=lambda r: (r.name, r.number)):
        try:
            there = target.catalog.get(record.name, record.version)
        except NotFoundError:
            todo.append(record)
            continue
        if there.digest != record.digest:
            raise AlreadyExistsError(
                f"{record.ref} is already in {target.catalog.location} with another artifact "
                f"({there.digest[:12]}, here {record.digest[:12]}); nothing migrated"
            )
        report.skipped.append(record.ref)
    return todo


def _copy_objects(source: ModelRegistry, target: ModelRegistry) -> int:
    copied = 0
    for name in sorted(source.store.blobs.names()):
        if target.store.blobs.exists(name):
            continue
        digest, suffix = name[:_DIGEST_CHARS], name[_DIGEST_CHARS:]
        if suffix.endswith(ENCRYPTED_SUFFIX):
            local = source.store.blobs.fetch(name, None)
        else:
            local = source.store.verified_path(digest, suffix)
        target.store.blobs.put_file(name, local)
        copied += 1
    return copied


def _copy_annotations(source: ModelRegistry, target: ModelRegistry, copied: list[ModelVersion]) -> None:
    """Annotations of the copied versions, and model-level ones of models new to the target."""
    for name in sorted({record.name for record in copied}):
        versions = {record.version for record in copied if record.name == name}
        known = {record.version for record in source.catalog.versions(name)}
        new_model = versions == known
        for row in source.catalog.all_annotations(name):
            if row.version in versions or (new_model and row.version not in known):
                target.catalog.annotate(name, row.version, row.kind, row.payload, row.at)


def _carry_audit(
    source: ModelRegistry,
    source_audit: AuditChain,
    target_audit: AuditChain,
    copied: list[ModelVersion],
    report: MigrationReport,
) -> None:
    adopt = getattr(target_audit, "adopt", None)
    entries = source_audit.entries()
    if adopt is not None and entries and adopt(entries):
        report.audit_adopted = len(entries)
    registered = {
        (entry.get("target"), _digest(entry))
        for entry in target_audit.entries()
        if entry.get("action") == REGISTER_ACTION
    }
    for record in copied:
        if (record.ref, record.digest) not in registered:
            details = {"digest": record.digest, "migrated": True, "source": source.store.location}
            target_audit.record(REGISTER_ACTION, "system:migrate", record.ref, details)
            report.audit_appended += 1


def _digest(entry: dict[str, Any]) -> Any:
    details = entry.get("details")
    return details.get("digest") if isinstance(details, dict) else None
