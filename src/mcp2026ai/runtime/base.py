"""The Backend protocol every runtime implements (onnxruntime today; fakes in tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mcp2026ai.errors import MCPError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.runtime.plan import Plan

Tensors = Mapping[str, np.ndarray]


@runtime_checkable
class Backend(Protocol):
    """Load a model, run batches of named numpy arrays, unload.

    ``plan`` is how it runs (runtime, threads, batching limits); ``platform`` is its Triton platform
    name (``onnxruntime_onnx``), which model metadata and configuration report.
    """

    @property
    def signature(self) -> Signature: ...

    @property
    def plan(self) -> Plan: ...

    @property
    def platform(self) -> str: ...

    @property
    def loaded(self) -> bool: ...

    def load(self) -> None: ...

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]: ...

    def unload(self) -> None: ...


class BackendClass(Protocol):
    """What the catalog hands out: builds an unloaded backend from a model file or its bytes."""

    def __call__(
        self,
        model: Path | bytes,
        signature: Signature,
        plan: Plan,
        optimized_model_path: Path | None = None,
        label: str | None = None,
    ) -> Backend: ...


@dataclass(frozen=True)
class RequestDetails:
    """What a request says about itself beyond its tensors, for backends that hand it on (Triton's
    Python models: ``request.request_id()``, ``request.parameters()``)."""

    request_id: str = ""
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class QueuedRequest:
    """One request of a batch, kept whole (not merged into one tensor): its tensors, requested outputs
    and deadline (a ``time.monotonic()`` instant)."""

    inputs: Tensors
    outputs: Sequence[str] | None
    deadline: float | None
    details: RequestDetails | None = None


@runtime_checkable
class RequestListBackend(Protocol):
    """A backend that takes a batch as a list of requests (Triton's Python models: ``execute(requests)``),
    answers each on its own (an error fails that request only), and runs user code: never inline on
    the event loop (it may call back into the data plane)."""

    def infer_requests(self, requests: Sequence[QueuedRequest]) -> list[dict[str, np.ndarray] | MCPError]: ...
