"""Runtime backends behind the Backend protocol."""

from mcp2026ai.runtime.base import Backend, Tensors
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend

__all__ = ["Backend", "OnnxRuntimeBackend", "Tensors"]
