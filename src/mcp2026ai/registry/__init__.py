"""Model registry: content-addressed artifacts (local or S3) plus a catalog (SQLite or PostgreSQL)."""

from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.records import ModelVersion, Preprocessing, Stage

__all__ = ["ModelRegistry", "ModelVersion", "Preprocessing", "Stage"]
