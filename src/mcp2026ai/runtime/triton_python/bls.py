"""Business logic scripting: a Python model's ``InferenceRequest(...).exec()`` back into the data plane.

The runtime may not import the data plane (tests/unit/test_layers.py), so the data plane binds its
entry point here at start (:meth:`BlsGateway.bind`) and the Python backend calls it from its worker
thread. Each call carries the calling request's deadline: a BLS call never outlives the request
that made it. Which gateway and deadline apply is the running ``execute``'s context
(:data:`CURRENT`), set by the backend around each call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcp2026ai.errors import UnavailableError


@dataclass(frozen=True)
class BlsCall:
    """One BLS request: what ``InferenceRequest(model_name=..., inputs=..., ...)`` asked for."""

    model: str
    inputs: Mapping[str, np.ndarray]
    outputs: list[str] | None
    version: str | None = None
    deadline: float | None = None
    """A ``time.monotonic()`` instant: the caller's deadline, or the BLS request's own ``timeout``."""
    parameters: dict[str, Any] = field(default_factory=dict)

    def remaining_s(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)


BlsTarget = Callable[[BlsCall], dict[str, np.ndarray]]
"""Runs a BLS call to completion (blocking, off the event loop): the outputs, or an MCPError."""


class BlsGateway:
    """The data plane's entry point for BLS calls, bound once the data plane exists."""

    def __init__(self) -> None:
        self._target: BlsTarget | None = None

    def bind(self, target: BlsTarget) -> None:
        self._target = target

    def __call__(self, call: BlsCall) -> dict[str, np.ndarray]:
        if self._target is None:
            raise UnavailableError("BLS is not available here: no data plane serves this model")
        return self._target(call)


@dataclass(frozen=True)
class ExecuteContext:
    """What a BLS call made inside ``execute`` inherits: the gateway and the calling request's deadline."""

    gateway: BlsGateway
    deadline: float | None


CURRENT: ContextVar[ExecuteContext | None] = ContextVar("triton_python_execute", default=None)
