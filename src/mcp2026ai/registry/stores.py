"""The registry a process uses, with the stores its settings name.

Local by default (``MCP_HOME/artifacts``, ``MCP_HOME/registry.db``, ``MCP_HOME/audit.jsonl``);
``MCP_ARTIFACT_URL=s3://bucket/prefix`` and ``MCP_CATALOG_URL=postgresql://...`` share them between
machines. The rest of the code sees a :class:`ModelRegistry` and never which backend is behind it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mcp2026ai.registry.artifacts import blob_store_for
from mcp2026ai.registry.catalogs import POSTGRES_SCHEMES, catalog_for
from mcp2026ai.registry.model_registry import REGISTRY_ACTOR, ModelRegistry
from mcp2026ai.registry.store import ArtifactStore
from mcp2026ai.security.audit import AuditChain, AuditLog
from mcp2026ai.security.files import private_dir
from mcp2026ai.settings import Settings, load_settings

if TYPE_CHECKING:
    from mcp2026ai.security.encryption import ArtifactCipher


def catalog_url(settings: Settings) -> str | None:
    return settings.catalog_url.get_secret_value() if settings.catalog_url is not None else None


def is_shared_catalog(url: str | None) -> bool:
    return bool(url) and str(url).startswith(POSTGRES_SCHEMES)


def shares_every_store(settings: Settings) -> bool:
    """Catalog in PostgreSQL and artifacts in S3: processes on any machine need no directory in common."""
    return is_shared_catalog(catalog_url(settings)) and (settings.artifact_url or "").startswith("s3://")


def open_registry(
    settings: Settings | None = None,
    cipher: ArtifactCipher | None = None,
    audit: AuditChain | None = None,
    actor: str = REGISTRY_ACTOR,
    home: Path | None = None,
) -> ModelRegistry:
    """The registry under ``home`` (default: ``settings.home``) with the artifact store and catalog the
    settings (default: the environment's) select."""
    settings = settings or load_settings()
    home = home or settings.home
    return open_stores(home, catalog_url(settings), settings.artifact_url, settings, cipher, audit, actor)


def open_stores(
    home: Path,
    catalog: str | None,
    artifacts: str | None,
    settings: Settings | None = None,
    cipher: ArtifactCipher | None = None,
    audit: AuditChain | None = None,
    actor: str = REGISTRY_ACTOR,
) -> ModelRegistry:
    """A registry on explicit store URLs (None: the local default under ``home``); cache and upload
    sizes from ``settings``."""
    settings = settings or load_settings()
    private_dir(home)
    blobs = blob_store_for(
        artifacts, home / "artifacts", settings.artifact_cache_bytes, settings.artifact_multipart_bytes
    )
    store = ArtifactStore(home / "artifacts", cipher, blobs)
    return ModelRegistry(home, cipher, audit, actor, store=store, catalog=catalog_for(catalog, home))


def audit_chain_for(catalog: str | None, audit_file: Path) -> AuditChain:
    """The registry's audit chain: beside a shared (PostgreSQL) catalog, else the JSONL file."""
    if is_shared_catalog(catalog):
        from mcp2026ai.registry.catalogs.postgres_audit import PostgresAuditLog

        return PostgresAuditLog(str(catalog))
    return AuditLog(audit_file)
