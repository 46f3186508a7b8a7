"""Process-wide settings from the environment (prefix ``MCP_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_", extra="ignore")

    home: Path = Field(
        default_factory=lambda: Path.home() / ".mcp2026ai",
        description="Where the registry keeps artifacts and its SQLite catalog (MCP_HOME).",
    )
    log_level: str = Field("info", description="Logging level (MCP_LOG_LEVEL).")
    trusted_keys: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Extra trusted Ed25519 public key files or folders of *.pub, comma-separated "
        "(MCP_TRUSTED_KEYS); MCP_HOME/trusted/*.pub are always trusted.",
    )
    tokens_file: Path | None = Field(
        default=None,
        description="Bearer tokens file (MCP_TOKENS_FILE), e.g. a mounted Kubernetes Secret; MCP_HOME/tokens.json "
        "if unset.",
    )
    audit_log: Path | None = Field(
        default=None, description="Audit log file (MCP_AUDIT_LOG); MCP_HOME/audit.jsonl if unset."
    )
    artifact_key_file: Path | None = Field(
        default=None,
        description="Base64 AES-256 key file; when set, new artifacts are encrypted at rest (MCP_ARTIFACT_KEY_FILE).",
    )
    artifact_key: SecretStr | None = Field(
        default=None, description="The same key inline, base64 (MCP_ARTIFACT_KEY); the file wins if both are set."
    )

    catalog_url: SecretStr | None = Field(
        default=None,
        description="Shared catalog, postgresql://user:password@host:port/db (MCP_CATALOG_URL); "
        "MCP_HOME/registry.db if unset. Its audit chain lives beside it.",
    )
    artifact_url: str | None = Field(
        default=None,
        description="Shared artifact store, s3://bucket/prefix (MCP_ARTIFACT_URL), with the usual AWS_ENDPOINT_URL, "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; MCP_HOME/artifacts if unset.",
    )
    artifact_cache_bytes: int = Field(
        default=10 << 30,
        ge=0,
        description="Bound on this node's cache of artifacts fetched from a shared store (MCP_ARTIFACT_CACHE_BYTES).",
    )
    artifact_multipart_bytes: int = Field(
        default=64 << 20,
        ge=5 << 20,
        description="Uploads to S3 larger than this go in parts of this size (MCP_ARTIFACT_MULTIPART_BYTES).",
    )

    @field_validator("trusted_keys", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [Path(part.strip()) for part in value.split(",") if part.strip()]
        return value


def load_settings() -> Settings:
    return Settings()
