"""Batch state, durable in the registry's stores (local, or S3 and PostgreSQL shared by replicas):
file bytes in the artifact store (content-addressed, encrypted at rest when the registry is), file
records, batch records and one row per answered line in the catalog's append-only annotations.

A batch's record is its latest ``batch`` row; its answered lines are its ``batch_result`` rows,
each written once the line's answer is complete. After a crash the runner answers only the lines
that have no row, and output files are built from the rows (the first per ``custom_id``), so no
``custom_id`` is answered twice or lost and ``request_counts`` is counted from the rows.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp2026ai.errors import NotFoundError
from mcp2026ai.registry import ModelRegistry

FILES = "openai-files"
BATCHES = "openai-batches"
SUFFIX = ".jsonl"
ACTIVE = ("validating", "in_progress", "finalizing", "cancelling")


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


class BatchStore:
    def __init__(self, registry: ModelRegistry) -> None:
        self.registry = registry
        self.catalog = registry.catalog

    # files -----------------------------------------------------------------------------------
    def put_file(self, data: bytes, filename: str, purpose: str, owner: str) -> dict[str, Any]:
        with tempfile.NamedTemporaryFile(dir=self._scratch(), suffix=SUFFIX) as spooled:
            spooled.write(data)
            spooled.flush()
            digest = self.registry.store.put(Path(spooled.name), SUFFIX)
        file_id = new_id("file")
        record: dict[str, Any] = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.catalog.annotate(FILES, file_id, "file", {**record, "digest": digest, "owner": owner}, utc_now())
        return record

    def file(self, file_id: str, owner: str | None) -> dict[str, Any]:
        rows = self.catalog.annotations(FILES, "file", file_id)
        if not rows or (owner is not None and rows[-1][2].get("owner") != owner):
            raise NotFoundError(f"no such file: {file_id[:80]!r}")
        return dict(rows[-1][2])

    def file_bytes(self, file_id: str, owner: str | None) -> bytes:
        return self.registry.store.read(str(self.file(file_id, owner)["digest"]), SUFFIX)

    def _scratch(self) -> Path:
        folder = self.registry.home / "tmp"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # batches ---------------------------------------------------------------------------------
    def save(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.catalog.annotate(BATCHES, batch["id"], "batch", batch, utc_now())
        return batch

    def batch(self, batch_id: str, owner: str | None = None) -> dict[str, Any]:
        rows = self.catalog.annotations(BATCHES, "batch", batch_id)
        if not rows or (owner is not None and rows[-1][2].get("owner") != owner):
            raise NotFoundError(f"no such batch: {batch_id[:80]!r}")
        return dict(rows[-1][2])

    def batches(self, owner: str | None = None) -> list[dict[str, Any]]:
        """Every batch's latest record, newest first."""
        latest: dict[str, dict[str, Any]] = {}
        for batch_id, _, payload in self.catalog.annotations(BATCHES, "batch"):
            latest[batch_id] = dict(payload)
        found = [batch for batch in latest.values() if owner is None or batch.get("owner") == owner]
        return sorted(found, key=lambda batch: (batch["created_at"], batch["id"]), reverse=True)

    # answered lines --------------------------------------------------------------------------
    def add_result(self, batch_id: str, result: dict[str, Any]) -> None:
        self.catalog.annotate(f"batch:{batch_id}", str(result["custom_id"]), "batch_result", result, utc_now())

    def results(self, batch_id: str) -> list[dict[str, Any]]:
        """Answered lines, the first row per ``custom_id``, oldest first."""
        first: dict[str, dict[str, Any]] = {}
        for custom_id, _, payload in self.catalog.annotations(f"batch:{batch_id}", "batch_result"):
            first.setdefault(custom_id, dict(payload))
        return list(first.values())
