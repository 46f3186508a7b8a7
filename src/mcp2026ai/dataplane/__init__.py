"""The use cases the servers expose (see plane.py): the edges decode, call these, and encode."""

from mcp2026ai.dataplane.plane import DataPlane
from mcp2026ai.dataplane.repository import ROLLBACK_ACTOR, SYSTEM_ACTOR

__all__ = ["ROLLBACK_ACTOR", "SYSTEM_ACTOR", "DataPlane"]
