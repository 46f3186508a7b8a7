"""What the edge proxy answers: the outputs, and which path served them and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Path = Literal["local", "remote"]


@dataclass(frozen=True)
class EdgeResult:
    path: Path
    """``local`` (this device's runtime) or ``remote`` (the fallback server)."""
    reason: str
    """Why that path: ``local registry``, ``pulled from <url>``, ``local busy (4 in flight)``,
    ``not in the local registry``, ``pull failed: ...``, ``local failed: ...``."""
    model: str
    version: str
    latency_ms: float
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    """The model's output tensors (for array inputs)."""
    predictions: list[dict[str, Any]] = field(default_factory=list)
    """Top-k classes (for an encoded image), as ``/v1/infer`` returns them."""
