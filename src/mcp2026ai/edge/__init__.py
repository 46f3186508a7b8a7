"""The edge: run a model on the device, with the server as fallback (:class:`ModelProxy`)."""

from mcp2026ai.edge.proxy import AsyncModelProxy, ModelProxy
from mcp2026ai.edge.result import EdgeResult

__all__ = ["AsyncModelProxy", "EdgeResult", "ModelProxy"]
