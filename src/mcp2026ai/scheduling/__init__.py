"""Scheduling: executors between the data plane and the runtime (direct, batching)."""

from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.batcher import BatchingExecutor
from mcp2026ai.scheduling.config import AdaptiveConfig, BatchingConfig, ClassPolicy
from mcp2026ai.scheduling.direct import DirectExecutor

__all__ = ["AdaptiveConfig", "BatchingConfig", "BatchingExecutor", "ClassPolicy", "DirectExecutor", "Executor"]
