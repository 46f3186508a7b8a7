"""The Backend protocol every runtime implements (onnxruntime today; fakes in tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from mcp2026ai.ir.signature import Signature

Tensors = Mapping[str, np.ndarray]


@runtime_checkable
class Backend(Protocol):
    """Load a model, run batches of named numpy arrays, unload."""

    @property
    def signature(self) -> Signature: ...

    @property
    def loaded(self) -> bool: ...

    def load(self) -> None: ...

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]: ...

    def unload(self) -> None: ...
