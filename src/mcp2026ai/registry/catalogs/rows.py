"""A :class:`ModelVersion` as one catalog row and back (shared by the SQLite and PostgreSQL catalogs)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from mcp2026ai.registry.records import ModelVersion

COLUMNS = "name, version, number, stage, format, digest, signature, contract, tags, preprocessing, parent, created_at"
PENDING_COLUMNS = "id, action, actor, target, details, created_at"


def now() -> str:
    return datetime.now(UTC).isoformat()


def to_row(record: ModelVersion) -> tuple[object, ...]:
    data = record.model_dump(mode="json")
    return (
        record.name,
        record.version,
        record.number,
        record.stage.value,
        record.format,
        record.digest,
        json.dumps(data["signature"]),
        # what the contract states, not its defaults: "only when the contract states it" survives a reload
        json.dumps(record.contract.model_dump(mode="json", exclude_unset=True)) if record.contract else None,
        json.dumps(record.tags, sort_keys=True),
        json.dumps(data["preprocessing"]) if record.preprocessing else None,
        record.parent,
        data["created_at"],
    )


def from_row(row: tuple[object, ...]) -> ModelVersion:
    name, version, number, stage, fmt, digest, signature, contract, tags, prep, parent, created = row
    return ModelVersion.model_validate(
        {
            "name": name,
            "version": version,
            "number": number,
            "stage": stage,
            "format": fmt,
            "digest": digest,
            "signature": json.loads(str(signature)),
            "contract": json.loads(str(contract)) if contract else None,
            "tags": json.loads(str(tags)),
            "preprocessing": json.loads(str(prep)) if prep else None,
            "parent": parent,
            "created_at": created,
        }
    )
