"""mcp2026ai: contract-driven model inference platform."""

from mcp2026ai.contract import InferenceContract, Precision, SLAClass
from mcp2026ai.errors import MCPError

__version__ = "0.1.0"

__all__ = ["InferenceContract", "MCPError", "Precision", "SLAClass", "__version__"]
