"""Model registry: content-addressed artifacts plus SQLite metadata."""

from mcp2026ai.registry.records import ModelVersion, Preprocessing, Stage
from mcp2026ai.registry.service import ModelRegistry

__all__ = ["ModelRegistry", "ModelVersion", "Preprocessing", "Stage"]
