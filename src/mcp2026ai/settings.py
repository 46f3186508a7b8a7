"""Process-wide settings from the environment (prefix ``MCP_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_", extra="ignore")

    home: Path = Field(
        default_factory=lambda: Path.home() / ".mcp2026ai",
        description="Where the registry keeps artifacts and its SQLite catalog (MCP_HOME).",
    )
    log_level: str = Field("info", description="Logging level (MCP_LOG_LEVEL).")


def load_settings() -> Settings:
    return Settings()
