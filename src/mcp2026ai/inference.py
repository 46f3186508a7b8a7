"""Transport-neutral inference requests and responses (what the servers decode into)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcp2026ai.contract import SequenceSpec, SLAClass
from mcp2026ai.ir.signature import Signature
from mcp2026ai.shared_memory import RegionRef

_REQUEST_IDS = random.Random()  # not the module's shared generator: nobody else's seed affects it


@dataclass(frozen=True)
class RequestedOutput:
    name: str
    binary: bool | None = None
    """Triton's binary_data output parameter; None means the request's default."""
    class_count: int = 0
    """Triton's classification parameter: return the top ``class_count`` classes instead of the scores."""
    shared_memory: RegionRef | None = None
    """Write the output into this system shared memory region instead of the response."""


@dataclass
class InferenceRequest:
    """One decoded v2 infer request."""

    model: str
    inputs: dict[str, np.ndarray]
    version: str | None = None
    id: str = ""
    outputs: list[RequestedOutput] = field(default_factory=list)
    parameters: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    """Lower-cased HTTP headers or gRPC metadata the routing and scheduling layers read."""
    sla_class: SLAClass | None = None
    """The SLA class the caller asked for in code; None lets the header, the ``sla_class`` parameter
    or the model's contract decide (the class it ran under comes back in the response)."""
    timeout_s: float | None = None
    """Client's own timeout; it can only shorten the SLA class deadline."""
    received_at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if not self.id:  # a routing key too (canary stickiness): random, but no syscall per request
            self.id = f"{_REQUEST_IDS.getrandbits(128):032x}"

    @property
    def output_names(self) -> list[str] | None:
        return [output.name for output in self.outputs] or None

    @property
    def batch_rows(self) -> int:
        first = next(iter(self.inputs.values()), None)
        return int(first.shape[0]) if first is not None and first.ndim else 1


@dataclass
class InferenceResponse:
    model: str
    version: str
    id: str
    outputs: dict[str, np.ndarray]
    parameters: dict[str, Any] = field(default_factory=dict)
    sla_class: SLAClass | None = None
    """The class the request was scheduled under (the edges label its metrics and span with it)."""


@dataclass(frozen=True)
class DynamicBatching:
    max_queue_delay_ms: float
    preferred_batch_sizes: tuple[int, ...]


@dataclass(frozen=True)
class ModelDescription:
    """What a served model version looks like from outside: the protocols shape it (protocol/triton.py)."""

    name: str
    versions: tuple[str, ...]
    platform: str
    signature: Signature
    max_batch_size: int
    """Most rows one request may carry; 0 when the model takes no batch dimension."""
    plan: str
    """The execution plan, described for a person."""
    dynamic_batching: DynamicBatching | None = None
    instance_count: int = 1
    """Batches the model runs at once (Triton's instance_group count)."""
    image_layout: str | None = None
    """NCHW or NHWC when the model takes an image (registered preprocessing), else None."""
    sequence: SequenceSpec | None = None
    """Sequence batching (controls, implicit state) of a stateful model."""
    labels: tuple[str, ...] = ()
    """The class labels registered with the model (the classification extension's)."""
    decoupled: bool = False
    """Answers with any number of responses per request (Triton's decoupled transaction policy)."""
