"""Scheduling: executors between the data plane and the runtime (direct, batching)."""

from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.direct import DirectExecutor

__all__ = ["DirectExecutor", "Executor"]
