"""The registry export: a registry holding only the deployed version (artifact, contract, signatures),
laid out like ``MCP_HOME`` so the image's ``mcp serve`` reads it as its own registry."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import yaml

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.audit_trail import REGISTER_ACTION
from mcp2026ai.registry.signing import SIGNATURE_KIND
from mcp2026ai.security import AuditLog

EXPORT_DIR = "registry"
AUDIT_LOG = "audit.jsonl"
"""The export's audit log, where the image's ``mcp`` finds it (MCP_HOME/audit.jsonl)."""
EXPORT_ACTOR = "system:export"
COPIED_KINDS = (SIGNATURE_KIND,)
"""Catalog annotations that travel with the version (a signature stays valid: it signs the name,
version, digest and metadata, not the integer alias)."""


def export_version(registry: ModelRegistry, record: ModelVersion, out: Path) -> Path:
    """Write ``out/registry`` (a fresh registry with ``record`` alone, plaintext) and
    ``out/registry/contract.yaml``; returns the export's home."""
    home = out / EXPORT_DIR
    if home.exists():
        if not (home / "registry.db").is_file():
            raise InvalidArgumentError(f"{home}: exists and is not a registry export; choose another --out")
        shutil.rmtree(home)
    exported = ModelRegistry(home)
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        artifact = Path(scratch) / "model.onnx"
        artifact.write_bytes(registry.artifact_bytes(record))  # decrypted if stored encrypted
        exported.store.put(artifact)
    exported.catalog.insert(record)
    # the image's own audit log accounts for the version it serves (`mcp audit verify` there)
    details = {"digest": record.digest, "source": "exported registry"}
    AuditLog(home / AUDIT_LOG).record(REGISTER_ACTION, EXPORT_ACTOR, record.ref, details)
    for kind in COPIED_KINDS:
        for _, at, payload in registry.catalog.annotations(record.name, kind, record.version):
            exported.catalog.annotate(record.name, record.version, kind, payload, at)
    contract = record.contract.model_dump(mode="json", exclude_none=True) if record.contract else {}
    (home / "contract.yaml").write_text(yaml.safe_dump(contract, sort_keys=False), encoding="utf-8")
    return home
