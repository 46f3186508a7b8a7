"""Objects CLI commands share: settings and the registry they open."""

from __future__ import annotations

from functools import lru_cache

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.settings import Settings, load_settings


@lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()


def registry() -> ModelRegistry:
    return ModelRegistry(settings().home)
