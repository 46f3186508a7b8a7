"""Triton's extensions that are settings rather than inference: trace and log settings, shared memory."""

from __future__ import annotations

from typing import Any

from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.observability.runtime_settings import LogSettings, TraceSettings
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.shared_memory import SharedMemoryRegions


class Extensions:
    """Trace and logging settings, and system shared memory (CUDA regions refused: no GPU here)."""

    def __init__(self, models: ServedModels, trace_settings: TraceSettings | None = None) -> None:
        self.models = models
        self.shared_memory = SharedMemoryRegions()
        self.trace = trace_settings or TraceSettings()
        self.logging = LogSettings()

    # trace and logging settings -------------------------------------------------------------
    def trace_settings(self, model: str | None = None) -> dict[str, Any]:
        if model:
            self.models.get(model)  # an unknown model is NotFoundError
        return self.trace.get(model)

    def update_trace_settings(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        if model:
            self.models.get(model)
        return self.trace.update(changes, model)

    def log_settings(self) -> dict[str, Any]:
        return self.logging.get()

    def update_log_settings(self, changes: dict[str, Any]) -> dict[str, Any]:
        return self.logging.update(changes)

    # shared memory --------------------------------------------------------------------------
    def register_system_shm(self, name: str, key: str, offset: int, byte_size: int) -> None:
        self.shared_memory.register(name, key, offset, byte_size)

    def system_shm_status(self, name: str | None = None) -> list[dict[str, Any]]:
        return self.shared_memory.status(name)

    def unregister_system_shm(self, name: str | None = None) -> None:
        self.shared_memory.unregister(name)

    def register_cuda_shm(self, name: str) -> None:
        raise InvalidArgumentError(f"cannot register CUDA shared memory region '{name[:100]}': this server has no GPU")

    def cuda_shm_status(self, name: str | None = None) -> list[dict[str, Any]]:
        if name:
            raise NotFoundError(f"Unable to find cuda shared memory region: '{name[:100]}'")
        return []

    def unregister_cuda_shm(self, name: str | None = None) -> None:
        """Nothing to unregister (as on a Triton without GPUs): succeeds."""

    def close(self) -> None:
        self.shared_memory.close()
