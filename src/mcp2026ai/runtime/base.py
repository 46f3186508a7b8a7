"""The Backend protocol every runtime implements (onnxruntime today; fakes in tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

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
